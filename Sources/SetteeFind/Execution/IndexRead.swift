import SetteeCore
import SetteeStorage
import SetteeViews

/// Reads the rows of a `find` JSON index: one view query, with the documents.
/// `row` returns false to stop reading.
package typealias IndexReader = (_ index: MangoIndex, _ options: ViewQueryOptions, _ row: (ViewRow) throws -> Bool) throws -> Void

/// `find` served by a JSON index (`mango_cursor_view`): the index's rows
/// in the key range the selector allows, in key order (then document id),
/// each document matched against the whole selector, then skipped, taken
/// and projected. A bookmark resumes after the row it names.
struct IndexRead {
    let index: MangoIndex
    let ranges: [FieldRange]
    let selector: MangoSelector
    let projection: FieldProjection
    let request: FindRequest
    let descending: Bool
    /// The documents' store, for a covering read (which reads no document)
    /// to leave out the documents past their expiration time; nil for none.
    var store: DocumentStore? = nil

    /// An end key's last element that sorts after every JSON value, non-empty
    /// objects included (`{}` sorts before them): an object whose one member's
    /// name is U+FFFF, the highest weight of the root collation, as CouchDB's
    /// `?MAX_JSON_OBJ` (`{<<255,255,255,255>>: <<>>}`) sorts after any object.
    static let afterEveryValue: JSONValue = .object([("\u{FFFF}\u{FFFF}\u{FFFF}\u{FFFF}", .null)])

    /// The view query: the leading columns' bounds as the start and end keys
    /// (rows of the boundary values the selector excludes are filtered after).
    var options: ViewQueryOptions {
        var options = ViewQueryOptions()
        options.reduce = false
        options.includeDocs = true
        if request.conflicts { options.conflicts = true }
        // find reports no offset: the rows before the range are not counted.
        options.countsOffset = false
        options.update = request.updatesIndex ? .true : .false
        let (low, high) = Self.keyBounds(ranges)
        options.descending = descending
        options.startKey = .array(descending ? high : low)
        options.endKey = .array(descending ? low : high)
        return options
    }

    /// The start and end keys of `ranges`' leading columns: their lower and
    /// upper bound values while each has one, the end key closed by
    /// ``afterEveryValue`` so that it takes in every key those values start.
    static func keyBounds(_ ranges: [FieldRange]) -> (low: [JSONValue], high: [JSONValue]) {
        var low: [JSONValue] = []
        for range in ranges {
            guard case .range(.value(let value), _, _, _) = range else { break }
            low.append(value)
        }
        var high: [JSONValue] = []
        for range in ranges {
            guard case .range(_, _, .value(let value), _) = range else { break }
            high.append(value)
        }
        high.append(afterEveryValue)
        return (low, high)
    }

    func run(after bookmark: Bookmark?, reader: IndexReader, stats: inout FindResult.ExecutionStats) throws -> (documents: [FoundDocument], last: Bookmark?) {
        guard request.limit > 0 else { return ([], nil) }
        if let covering = CoveringRead(self) { return try covering.run(after: bookmark, reader: reader, stats: &stats) }
        var options = self.options
        if let bookmark {
            options.startKey = bookmark.key
            options.startKeyDocID = bookmark.id
        }
        var documents: [FoundDocument] = []
        var lastReturned: ViewRow?
        var skip = request.skip
        var resuming = bookmark
        var examined = (keys: 0, documents: 0)
        try reader(index, options) { row in
            examined.keys += 1
            if let mark = resuming {
                resuming = nil
                // The bookmarked row itself ended the previous page.
                if row.id == mark.id, CollationKey.compare(try row.key, mark.key, mode: .unicode) == 0 { return true }
            }
            // A row whose document is gone (`null`) is no result.
            guard var text = row.documentJSON, text.utf8.first == UInt8(ascii: "{") else { return true }
            examined.documents += 1
            // Matched on the document's text: only the fields the selector names are parsed.
            guard try text.withUTF8({ try selector.matches(json: UnsafeRawBufferPointer($0)) }) else { return true }
            if skip > 0 {
                skip -= 1
                return true
            }
            // A match past a full page ends the read (read only for the statistics).
            guard documents.count < request.limit else { return false }
            // Kept as text: parsed only if the caller reads it as a value.
            documents.append(try projection.extract(jsonText: text))
            lastReturned = row
            return documents.count < request.limit || request.readsPastPage
        }
        let last = try lastReturned.map { row throws in Bookmark(key: try row.key, id: row.id ?? "") }
        stats.totalKeysExamined += examined.keys
        stats.countDocumentsExamined(examined.documents, for: request)
        return (documents, last)
    }
}
