import Foundation
import SetteeCore
import SetteeStorage

/// `find` served by a JSON index: the documents the index holds (those with
/// every indexed field, and matching its partial filter) that match the
/// selector, in the index's order — its columns' values as one key in
/// CouchDB's collation, then the document id.
///
/// The rows are worked out from the documents, by one scan, and ordered in
/// memory.
struct IndexOrder {
    let index: MangoIndex
    let store: DocumentStore
    let selector: MangoSelector
    let projection: FieldProjection
    let request: FindRequest
    let descending: Bool

    func run(after bookmark: Bookmark?, stats: inout FindResult.ExecutionStats) throws -> (documents: [JSONValue], last: Bookmark?) {
        guard request.limit > 0 else { return ([], nil) }
        var everything = request
        everything.limit = .max
        everything.skip = 0
        everything.fields = []
        let scan = DocumentScan(store: store, selector: selector, projection: try FieldProjection([]), request: everything, descending: false)
        let (matching, _) = try scan.run(after: nil, stats: &stats)
        let partial = try index.partialFilterSelector.map { selector throws(MangoError) in try MangoSelector(selector) }
        let paths = try index.fields.map { field throws(MangoError) in try FieldPath(field.field) }
        var rows: [(key: JSONValue, id: String, document: JSONValue)] = []
        for document in matching {
            if let partial, !partial.matches(document) { continue }
            var key: [JSONValue] = []
            for path in paths {
                guard case .found(let value) = path.lookup(in: document) else { break }
                key.append(value)
            }
            guard key.count == paths.count, let id = document["_id"]?.stringValue else { continue }
            rows.append((.array(key), id, document))
        }
        func precedes(_ a: (key: JSONValue, id: String), _ b: (key: JSONValue, id: String)) -> Bool {
            let order = CollationKey.compare(a.key, b.key, mode: .unicode)
            return order != 0 ? order < 0 : JSONValue.compareBytes(a.id, b.id) < 0
        }
        rows.sort { descending ? precedes(($1.key, $1.id), ($0.key, $0.id)) : precedes(($0.key, $0.id), ($1.key, $1.id)) }
        var start = rows.startIndex
        if let bookmark {
            start = rows.firstIndex { descending ? precedes(($0.key, $0.id), (bookmark.key, bookmark.id))
                                                 : precedes((bookmark.key, bookmark.id), ($0.key, $0.id)) } ?? rows.endIndex
        }
        let page = rows[start...].dropFirst(request.skip).prefix(request.limit)
        return (page.map { projection.extract($0.document) }, page.last.map { Bookmark(key: $0.key, id: $0.id) })
    }
}
