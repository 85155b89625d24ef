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

    /// The ids to read: the planner's range of `_id` (`mango_idx_special:start_key/1`,
    /// `end_key/1`), narrowed in collation order as CouchDB narrows it, read
    /// in the documents' byte order as CouchDB reads `_all_docs`. A bound
    /// that is no string leaves that end open: every id is a string, and the
    /// selector decides.
    let range: FieldRange

    /// A bound of `range`, as the UTF-8 of an id.
    private static func idBound(_ bound: FieldRange.Bound, inclusive: Bool) -> (id: [UInt8], inclusive: Bool)? {
        guard case .value(.string(let id)) = bound else { return nil }
        return (Array(id.utf8), inclusive)
    }

    /// Runs the scan: the page of results, the last result's id, and the work done.
    func run(after bookmark: Bookmark?, stats: inout FindResult.ExecutionStats) throws -> (documents: [FoundDocument], last: String?) {
        guard case .range(let lowBound, let lowInclusive, let highBound, let highInclusive) = range else { return ([], nil) }
        let start = Self.idBound(lowBound, inclusive: lowInclusive)
        let end = Self.idBound(highBound, inclusive: highInclusive)
        var documents: [FoundDocument] = []
        var last: String?
        var skip = request.skip
        let limit = request.limit
        guard limit > 0 else { return ([], nil) }
        try store.environment.read { transaction in
            try transaction.withCursor(store.docs) { cursor in
                // The scan begins at the low end (ascending) or the high end (descending),
                // or where the bookmarked page ended.
                let low = start?.id
                let high = end?.id
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
                var pages = MappedPagesRelease(store.environment)
                var isFirst = true
                var cancellation = CancellationCheck()
                while true {
                    try cancellation.step()
                    if !isFirst { entry = descending ? try cursor.previous() : try cursor.next() }
                    isFirst = false
                    guard let (key, value) = entry else { return }
                    if let bound = resume {
                        // The bookmarked document itself was on the previous page.
                        if compareBytes(key, bound) == 0 { resume = nil; continue }
                        resume = nil
                    }
                    // Within the range?
                    if let low, let start {
                        let order = compareBytes(key, low)
                        if order < 0 || (order == 0 && !start.inclusive) {
                            if descending { return }
                            continue
                        }
                    }
                    if let high, let end {
                        let order = compareBytes(key, high)
                        if order > 0 || (order == 0 && !end.inclusive) {
                            if descending { continue }
                            return
                        }
                    }
                    pages.read(key.count + value.count)
                    let record = try DocumentRecord(bytes: value, id: key, path: store.environment.path)
                    if record.isDeleted { continue }
                    if try store.isExpired(key, in: transaction) { continue }
                    stats.totalKeysExamined += 1
                    // Design documents are not found (mango_cursor_view skips them in _all_docs),
                    // but counted as CouchDB counts them: read with the rows, dropped after.
                    if key.starts(with: Self.designPrefix) {
                        if request.r == 1 { stats.totalDocsExamined += 1 }
                        continue
                    }
                    stats.countDocumentsExamined(1, for: request)
                    json.removeAll(keepingCapacity: true)
                    record.appendFullJSON(id: key, into: &json)
                    if request.conflicts { try store.appendConflicts(of: record, key: key, to: &json, deleted: false, in: transaction) }
                    guard try json.withUnsafeBytes({ try selector.matches(json: $0) }) else { continue }
                    if skip > 0 {
                        skip -= 1
                        continue
                    }
                    // A match past a full page ends the scan (read only for the statistics).
                    if documents.count >= limit { return }
                    documents.append(try projection.extract(jsonText: String(decoding: json, as: UTF8.self)))
                    last = String(decoding: key, as: UTF8.self)
                    if documents.count >= limit, !request.readsPastPage { return }
                }
            }
        }
        return (documents, last)
    }
}
