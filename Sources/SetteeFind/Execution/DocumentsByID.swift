import SetteeCore
@_spi(LMDB) import SetteeStorage
import SetteeViews

/// Live documents read in `_id` order (bytes), design documents left out,
/// as `find` over `_all_docs` reads them: every one, or those of a list of ids.
struct DocumentsByID {
    let store: DocumentStore

    private static let designPrefix = Array("_design/".utf8)

    /// Calls `body` with the id and whole JSON text of each live document of
    /// `ids` (sorted by bytes) after `after`, until it returns false.
    func forEach(of ids: [String], after: String?, _ body: (String, [UInt8]) throws -> Bool) throws {
        try store.environment.read { transaction in
            var pages = MappedPagesRelease(store.environment)
            var cancellation = CancellationCheck()
            for id in ids {
                try cancellation.step()
                if let after, JSONValue.compareBytes(id, after) <= 0 { continue }
                if id.utf8.starts(with: Self.designPrefix) { continue }
                guard let document = try store.record(id, in: transaction), !document.isDeleted else { continue }
                pages.read(document.body.count)
                if try !body(id, document.jsonBytes) { return }
            }
        }
    }

    /// Calls `body` with the id and whole JSON text of every live document
    /// after `after`, until it returns false.
    func forEach(after: String?, _ body: (String, [UInt8]) throws -> Bool) throws {
        try store.environment.read { transaction in
            try transaction.withCursor(store.docs) { cursor in
                var entry = try after.map { after in try cursor.seek(atOrAfter: Array(after.utf8)) } ?? cursor.first()
                var json: [UInt8] = []
                var pages = MappedPagesRelease(store.environment)
                var isFirst = true
                var cancellation = CancellationCheck()
                while true {
                    try cancellation.step()
                    if !isFirst { entry = try cursor.next() }
                    isFirst = false
                    guard let (key, value) = entry else { return }
                    pages.read(key.count + value.count)
                    if let after, key.elementsEqual(after.utf8) { continue }
                    if key.starts(with: Self.designPrefix) { continue }
                    let record = try DocumentRecord(bytes: value, id: key, path: store.environment.path)
                    if record.isDeleted { continue }
                    if try store.isExpired(key, in: transaction) { continue }
                    json.removeAll(keepingCapacity: true)
                    record.appendFullJSON(id: key, into: &json)
                    if try !body(String(decoding: key, as: UTF8.self), json) { return }
                }
            }
        }
    }
}
