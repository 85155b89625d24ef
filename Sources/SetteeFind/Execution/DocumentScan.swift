import Foundation
import SetteeCore
@_spi(LMDB) import SetteeStorage

/// `find` over `_all_docs`, CouchDB's "special" index: the documents in `_id`
/// order (bytes), each matched against the selector. The selector's
/// conditions on `_id` narrow the range read.
struct DocumentScan {
    let store: DocumentStore
    let selector: MangoSelector
    let projection: FieldProjection
    let request: FindRequest
    let descending: Bool

    private static let designPrefix = Array("_design/".utf8)

    /// The ids the selector allows, from its top-level conditions on `_id`.
    struct IDRange {
        var start: (id: String, inclusive: Bool)?
        var end: (id: String, inclusive: Bool)?
        var isEmpty = false

        init(_ normalized: JSONValue) {
            let conditions: [JSONValue]
            if case .object(let members) = normalized, members.count == 1, members[0].key == "$and", case .array(let all) = members[0].value {
                conditions = all
            } else {
                conditions = [normalized]
            }
            for condition in conditions {
                guard case .object(let members) = condition, members.count == 1, members[0].key == "_id",
                      case .object(let operation) = members[0].value, operation.count == 1,
                      case .string(let id) = operation[0].value else { continue }
                switch operation[0].key {
                case "$eq": narrowStart(id, inclusive: true); narrowEnd(id, inclusive: true)
                case "$gt": narrowStart(id, inclusive: false)
                case "$gte": narrowStart(id, inclusive: true)
                case "$lt": narrowEnd(id, inclusive: false)
                case "$lte": narrowEnd(id, inclusive: true)
                default: continue
                }
            }
        }

        private mutating func narrowStart(_ id: String, inclusive: Bool) {
            if let start, JSONValue.compareBytes(start.id, id) > 0 || (JSONValue.compareBytes(start.id, id) == 0 && !start.inclusive) { return }
            start = (id, inclusive)
        }

        private mutating func narrowEnd(_ id: String, inclusive: Bool) {
            if let end, JSONValue.compareBytes(end.id, id) < 0 || (JSONValue.compareBytes(end.id, id) == 0 && !end.inclusive) { return }
            end = (id, inclusive)
        }
    }

    /// Runs the scan: the page of results, the last result's id, and the work done.
    func run(after bookmark: Bookmark?, stats: inout FindResult.ExecutionStats) throws -> (documents: [FoundDocument], last: String?) {
        let range = IDRange(selector.normalized)
        var documents: [FoundDocument] = []
        var last: String?
        var skip = request.skip
        let limit = request.limit
        guard limit > 0 else { return ([], nil) }
        try store.environment.read { transaction in
            try transaction.withCursor(store.docs) { cursor in
                // The scan begins at the low end (ascending) or the high end (descending),
                // or where the bookmarked page ended.
                let low = range.start.map { Array($0.id.utf8) }
                let high = range.end.map { Array($0.id.utf8) }
                var resume = bookmark.map { Array($0.id.utf8) }
                var entry: LMDBCursor.Entry?
                if descending {
                    let from = resume ?? high
                    if let from {
                        entry = try from.withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
                        if entry == nil { entry = try cursor.last() } else if let (key, _) = entry, compareBytes(key, from) > 0 { entry = try cursor.previous() }
                    } else {
                        entry = try cursor.last()
                    }
                } else {
                    let from = resume ?? low
                    entry = try from.map { from in try from.withUnsafeBytes { try cursor.seek(atOrAfter: $0) } } ?? cursor.first()
                }
                var json: [UInt8] = []
                var isFirst = true
                while true {
                    if !isFirst { entry = descending ? try cursor.previous() : try cursor.next() }
                    isFirst = false
                    guard let (key, value) = entry else { return }
                    if let bound = resume {
                        // The bookmarked document itself was on the previous page.
                        if compareBytes(key, bound) == 0 { resume = nil; continue }
                        resume = nil
                    }
                    // Within the range?
                    if let low, let start = range.start {
                        let order = compareBytes(key, low)
                        if order < 0 || (order == 0 && !start.inclusive) {
                            if descending { return }
                            continue
                        }
                    }
                    if let high, let end = range.end {
                        let order = compareBytes(key, high)
                        if order > 0 || (order == 0 && !end.inclusive) {
                            if descending { continue }
                            return
                        }
                    }
                    // Design documents are not found (mango_cursor_view skips them in _all_docs).
                    if key.starts(with: Self.designPrefix) { continue }
                    let record = try DocumentRecord(bytes: value, id: key, path: store.environment.path)
                    if record.isDeleted { continue }
                    if try store.isExpired(key, in: transaction) { continue }
                    stats.totalKeysExamined += 1
                    stats.totalDocsExamined += 1
                    json.removeAll(keepingCapacity: true)
                    record.appendFullJSON(id: key, into: &json)
                    guard try json.withUnsafeBytes({ try selector.matches(json: $0) }) else { continue }
                    if skip > 0 {
                        skip -= 1
                        continue
                    }
                    documents.append(try projection.extract(jsonText: String(decoding: json, as: UTF8.self)))
                    last = String(decoding: key, as: UTF8.self)
                    if documents.count >= limit { return }
                }
            }
        }
        return (documents, last)
    }
}
