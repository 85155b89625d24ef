import SetteeCore
import SetteeStorage
package import SetteeViews

/// Reads a `find` index's rows: those `scan` asks for, on one snapshot,
/// until `entry` returns false. The scan's keys are encoded with
/// ``CollationKey`` (`.unicode`, as `find`'s indexes are ordered).
package typealias IndexReader = (_ index: MangoIndex, _ scan: IndexScan, _ entry: (IndexEntry) throws -> Bool) throws -> Void

/// `find` served by a JSON index (`mango_cursor_view`): the index's rows
/// in the key range the selector allows, in key order (then document id),
/// each document matched against the whole selector (unless the row's key
/// proves it: ``keysProveSelector``), then skipped, taken and projected. A
/// bookmark resumes after the row it names.
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
    /// Whether every row in the ranges matches the selector but those on a
    /// bound it leaves out (see `QueryPlanner.Plan.keysProve(_:)`): a
    /// document read through a current index is then not matched again.
    var keysProveSelector = false

    /// An end key's last element that sorts after every JSON value, non-empty
    /// objects included (`{}` sorts before them): an object whose one member's
    /// name is U+FFFF, the highest weight of the root collation, as CouchDB's
    /// `?MAX_JSON_OBJ` (`{<<255,255,255,255>>: <<>>}`) sorts after any object.
    static let afterEveryValue: JSONValue = .object([("\u{FFFF}\u{FFFF}\u{FFFF}\u{FFFF}", .null)])
    /// ``afterEveryValue`` encoded.
    static let afterEveryValueKey = CollationKey.encode(afterEveryValue, mode: .unicode)

    /// The index's rows to read: those between the leading columns' bounds
    /// (rows of the boundary values the selector excludes are filtered
    /// after), from just after `bookmark`'s row when given.
    func scan(after bookmark: Bookmark?) -> IndexScan {
        let (low, high) = Self.keyBounds(ranges)
        let lowKey = CollationKey.encode(.array(low), mode: .unicode)
        // Equal bounds (equalities): the end key is the start key closed by `afterEveryValue`, encoded once.
        let highKey = high.count == low.count + 1 && zip(low, high).allSatisfy({ ViewQueryOptions.identical($0.0, $0.1) })
            ? CollationKey.appending(element: Self.afterEveryValueKey, toArray: lowKey)
            : CollationKey.encode(.array(high), mode: .unicode)
        var start = descending ? highKey : lowKey
        if let bookmark { start = CollationKey.encode(bookmark.key, mode: .unicode) }
        return IndexScan(range: .keys(from: start, docID: bookmark?.id, to: descending ? lowKey : highKey, descending: descending),
                         descending: descending)
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
        var scan = scan(after: bookmark)
        // Keys encode numbers as doubles: bounds where integers round (past 2^53) prove nothing.
        let keysProveSelector = keysProveSelector && FieldRange.boundsAreExact(ranges)
        scan.documents = true
        scan.checksCurrency = keysProveSelector
        var documents: [FoundDocument] = []
        // The last result's key (JSON text) and document id, for the bookmark.
        var lastKey: [UInt8] = []
        var lastID: [UInt8] = []
        var skip = request.skip
        var resuming = bookmark
        var examined = (keys: 0, documents: 0)
        // Rows on a bound the selector leaves out (`$gt`, `$lt`), when the keys prove the rest.
        let excluded = keysProveSelector ? FieldRange.excludedKeyPrefixes(ranges) : []
        var cancellation = CancellationCheck()
        try reader(index, scan) { entry in
            try cancellation.step()
            examined.keys += 1
            let row = entry.row
            if let mark = resuming {
                resuming = nil
                // The bookmarked row itself ended the previous page.
                if row.id == mark.id, CollationKey.compare(try JSONParser.parse(row.keyJSON), mark.key, mode: .unicode) == 0 { return true }
            }
            // A row whose document is gone is no result.
            guard let text = entry.document, text.first == UInt8(ascii: "{") else { return true }
            examined.documents += 1
            // Matched on the document's text (only the fields the selector names are parsed),
            // unless the row's key, the document's current one, proves whether it matches.
            if keysProveSelector && entry.indexIsCurrent {
                let key = row.encodedKey
                guard !excluded.contains(where: { key.starts(with: $0) }) else { return true }
            } else {
                guard try selector.matches(json: text) else { return true }
            }
            if skip > 0 {
                skip -= 1
                return true
            }
            // A match past a full page ends the read (read only for the statistics).
            guard documents.count < request.limit else { return false }
            // Kept as text: parsed only if the caller reads it as a value.
            documents.append(try projection.extract(jsonText: String(decoding: text, as: UTF8.self)))
            lastKey.removeAll(keepingCapacity: true)
            lastKey.append(contentsOf: row.keyJSON)
            lastID.removeAll(keepingCapacity: true)
            row.withID { lastID.append(contentsOf: $0) }
            return documents.count < request.limit || request.readsPastPage
        }
        let last = documents.isEmpty ? nil : Bookmark(key: try JSONParser.parse(lastKey), id: String(decoding: lastID, as: UTF8.self))
        stats.totalKeysExamined += examined.keys
        stats.countDocumentsExamined(examined.documents, for: request)
        return (documents, last)
    }
}
