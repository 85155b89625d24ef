import Foundation
import SetteeCore
import SetteeStorage

/// Runs `find` queries on a document store: plans which index serves the
/// query (CouchDB's `mango_cursor:create/4`), reads it, matches, sorts and
/// pages as CouchDB's Mango does.
package struct Finder {
    package let store: DocumentStore

    package init(store: DocumentStore) {
        self.store = store
    }

    /// Runs `request`.
    /// - Throws: ``MangoError`` for a request CouchDB would refuse
    ///   (a bad selector, a sort no index serves, `use_index` naming no usable
    ///   index with `allow_fallback` false); storage errors.
    package func find(_ request: FindRequest) throws -> FindResult {
        let started = ContinuousClock.now
        let selector = try MangoSelector(request.selector)
        let projection = try FieldProjection(request.fields)
        let bookmark = try request.bookmark.map { text throws(MangoError) in try Bookmark(decoding: text) }
        var warnings: [String] = []

        // `_all_docs` serves every selector; a sort only when it is by `_id`
        // and the selector constrains `_id` (mango_idx_special:is_usable/3).
        if !request.sort.isEmpty {
            let sortsByID = request.sort.map(\.field) == ["_id"]
            guard sortsByID, Self.indexableFields(selector.normalized).contains("_id") else {
                throw MangoError(error: "no_usable_index", reason: "No index exists for this sort, try indexing by the sort fields.")
            }
        }
        if !request.useIndex.isEmpty {
            guard request.allowFallback else {
                let details = request.useIndex.map { $0.hasPrefix("_design/") ? String($0.dropFirst("_design/".count)) : $0 }
                throw MangoError(error: "invalid_index", reason: details.count == 1
                    ? "_design/\(details[0]) specified by `use_index` could not be found or it is not suitable."
                    : "_design/\(details[0]), \(details[1]) specified by `use_index` could not be found or it is not suitable.")
            }
            warnings.append(Self.unusedIndexWarning(request.useIndex))
        }

        var stats = FindResult.ExecutionStats()
        let scan = DocumentScan(store: store, selector: selector, projection: projection, request: request,
                                descending: request.sort.first?.descending ?? false)
        let (documents, last) = try scan.run(after: bookmark, stats: &stats)
        stats.resultsReturned = documents.count
        stats.executionTimeMilliseconds = Double((ContinuousClock.now - started) / .microseconds(1)) / 1000

        warnings.append("No matching index found, create an index to optimize query time.")
        if Self.examinesTooMany(stats) {
            warnings.append("The number of documents examined is high in proportion to the number of results returned. Consider adding a more specific index to improve this.")
        }
        return FindResult(
            documents: documents,
            bookmark: last.map { Bookmark(key: .string($0), id: $0).encoded } ?? request.bookmark ?? "nil",
            warning: warnings.joined(separator: "\n"),
            executionStats: request.executionStats ? stats : nil)
    }

    /// `mango_idx_view:indexable_fields/1`: the fields a normalized selector
    /// constrains in a way an index can seek (through `$and` only).
    static func indexableFields(_ selector: JSONValue) -> Set<String> {
        guard case .object(let members) = selector, members.count == 1 else { return [] }
        let (key, argument) = members[0]
        if key == "$and" {
            return (argument.arrayValue ?? []).reduce(into: Set<String>()) { $0.formUnion(indexableFields($1)) }
        }
        if key.hasPrefix("$") { return [] }
        guard case .object(let condition) = argument, condition.count == 1 else { return [] }
        return ["$lt", "$lte", "$eq", "$gt", "$gte", "$beginsWith", "$exists"].contains(condition[0].key) ? [key] : []
    }

    /// `mango_cursor:invalid_index_warning/2`.
    static func unusedIndexWarning(_ useIndex: [String]) -> String {
        let design = useIndex[0].hasPrefix("_design/") ? String(useIndex[0].dropFirst("_design/".count)) : useIndex[0]
        if useIndex.count == 1 {
            return "_design/\(design) was not used because it does not contain a valid index for this query."
        }
        return "_design/\(design), \(useIndex[1]) was not used because it is not a valid index for this query."
    }

    /// `mango_cursor:index_scan_warning/1`: more than 10 documents examined per result.
    static func examinesTooMany(_ stats: FindResult.ExecutionStats) -> Bool {
        let examined = Double(stats.totalDocsExamined + stats.totalQuorumDocsExamined)
        let ratio = stats.resultsReturned == 0 ? examined : examined / Double(stats.resultsReturned)
        return ratio > 10
    }
}
