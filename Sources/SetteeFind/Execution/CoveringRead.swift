import Foundation
import SetteeCore
@_spi(LMDB) import SetteeStorage
import SetteeViews

/// `find` answered from a JSON index's keys alone, without reading a
/// document: CouchDB's covering index (`mango_cursor_view:consider_index_coverage/3`,
/// `derive_doc_from_index/2`). When every field asked for and every field
/// the selector names is one of the index's columns or `_id`, each row's
/// key holds all of them: the row's document is rebuilt from the key (each
/// column's value at its path, and `_id`), matched against the selector and
/// projected to the fields, as the stored document would have been.
///
/// The index holds only documents that have every column, so a rebuilt
/// document matches exactly when the stored one does. The statistics count
/// the keys read and no document.
struct CoveringRead {
    let read: IndexRead
    /// The index's columns, in key order.
    let columns: [FieldPath]

    /// A covering read for `read`, or nil when its index does not cover the
    /// request (whole documents asked for, or a field outside the index).
    init?(_ read: IndexRead) {
        // A key's numbers no longer say whether they were written as floats, which `$mod` needs.
        guard read.index.type == "json", !read.selector.readsNumberForms,
              Explanation.covers(read.index, request: read.request, selector: read.selector.normalized),
              let columns = try? read.index.fields.map({ field throws(MangoError) in try FieldPath(field.field) })
        else { return nil }
        self.read = read
        self.columns = columns
    }

    /// The document a row stands for, rebuilt from its key and id; nil for a
    /// key that is not one value per column.
    func document(key: JSONValue, id: String) -> JSONValue? {
        guard case .array(let values) = key, values.count == columns.count else { return nil }
        var document: JSONValue = .object([("_id", .string(id))])
        for (column, value) in zip(columns, values).reversed() {
            document = FieldProjection.set(value, at: column.parts[...], in: document)
        }
        return document
    }

    /// Reads the index's rows without their documents (see ``IndexRead/run(after:reader:stats:)``).
    func run(after bookmark: Bookmark?, reader: IndexReader, stats: inout FindResult.ExecutionStats) throws -> (documents: [FoundDocument], last: Bookmark?) {
        let request = read.request
        let scan = read.scan(after: bookmark)
        var documents: [FoundDocument] = []
        var lastReturned: (key: JSONValue, id: String)?
        var skip = request.skip
        var resuming = bookmark
        var keys = 0
        // The index keeps a document's rows until its purge, which may not have run yet.
        let expired = try read.store.map(Self.expiredIDs) ?? []
        try reader(read.index, scan) { entry in
            keys += 1
            let key = try JSONParser.parse(entry.row.keyJSON)
            let id = entry.row.id
            guard !expired.contains(id) else { return true }
            if let mark = resuming {
                resuming = nil
                // The bookmarked row itself ended the previous page.
                if id == mark.id, CollationKey.compare(key, mark.key, mode: .unicode) == 0 { return true }
            }
            guard let document = document(key: key, id: id), read.selector.matches(document) else { return true }
            if skip > 0 {
                skip -= 1
                return true
            }
            // A match past a full page ends the read (read only for the statistics).
            guard documents.count < request.limit else { return false }
            documents.append(FoundDocument(read.projection.extract(document)))
            lastReturned = (key, id)
            return documents.count < request.limit || request.readsPastPage
        }
        stats.totalKeysExamined += keys
        return (documents, lastReturned.map { Bookmark(key: $0.key, id: $0.id) })
    }

    /// The documents whose expiration time has passed and that are not yet
    /// purged (as ``DocumentStore/isExpired(_:in:)`` finds them): read as
    /// missing, as every other read takes them. Usually none: the purge
    /// follows within a second.
    private static func expiredIDs(_ store: DocumentStore) throws -> Set<String> {
        guard store.expirationTimes != nil else { return [] }
        return try store.environment.read { transaction in
            Set(try store.expiring(before: Date(), in: transaction).map(\.id))
        }
    }
}
