import Foundation
package import SetteeCore
package import SetteeStorage

/// Runs `find` queries on a document store: plans which index serves the
/// query (CouchDB's `mango_cursor:create/4`), reads it, matches, sorts and
/// pages as CouchDB's Mango does.
package struct Finder {
    package let store: DocumentStore
    /// Whether the database is partitioned: a partition query is then allowed,
    /// and each query reads only the indexes of its scope (``PartitionScope``).
    package var databaseIsPartitioned = false

    package init(store: DocumentStore) {
        self.store = store
    }

    /// Runs `request`.
    /// - Throws: ``MangoError`` for a request CouchDB would refuse
    ///   (a bad selector, a sort no index serves, `use_index` naming no usable
    ///   index with `allow_fallback` false); storage errors.
    /// - Parameters:
    ///   - indexes: The indexes the planner may use (`_all_docs` among them).
    ///   - reader: Reads a JSON or array index's rows.
    package func find(_ request: FindRequest, indexes: [MangoIndex] = [.allDocuments], reader: IndexReader? = nil) throws -> FindResult {
        try find(request, prepared: try PreparedFind(request, indexes: indexes, databaseIsPartitioned: databaseIsPartitioned), reader: reader)
    }

    /// Runs `request` as `prepared` (made from a request with the same selector, sort,
    /// fields, `use_index` and `allow_fallback`, over the indexes now current) says.
    package func find(_ request: FindRequest, prepared: PreparedFind, reader: IndexReader? = nil) throws -> FindResult {
        // Timed only for the statistics that report it.
        let started = request.executionStats ? ContinuousClock.now : nil
        let (selector, projection, plan) = (prepared.selector, prepared.projection, prepared.plan)
        let bookmark = try request.bookmark.map { text throws(MangoError) in try Bookmark(decoding: text) }
        var warnings: [String] = []
        if plan.ignoredUseIndex { warnings.append(Self.unusedIndexWarning(request.useIndex)) }

        var stats = FindResult.ExecutionStats()
        let descending = request.sort.first?.descending ?? false
        let documents: [FoundDocument]
        let last: Bookmark?
        if plan.ranges == [.empty] {
            // A selector that is an empty $or, $and, $in or $all: nothing to read (mango_cursor:maybe_noop_range/2).
            documents = []
            last = nil
        } else if plan.index.type == "special" {
            let scan = DocumentScan(store: store, selector: selector, projection: projection, request: request, descending: descending,
                                    range: plan.ranges.first ?? .everything)
            let (found, lastID) = try scan.run(after: bookmark, stats: &stats)
            documents = found
            last = lastID.map { Bookmark(key: .string($0), id: $0) }
        } else if plan.index.type == "array", let lookup = plan.arrayLookup, let reader {
            let read = ArrayIndexRead(index: plan.index, lookup: lookup, descending: descending)
            let (found, lastID) = try read.run(store: store, selector: selector, projection: projection, request: request,
                                               after: bookmark, reader: reader, stats: &stats)
            documents = found
            last = lastID.map { Bookmark(key: .string($0), id: $0) }
        } else if let reader {
            var read = IndexRead(index: plan.index, ranges: plan.ranges, selector: selector, projection: projection,
                                 request: request, descending: descending, store: store)
            read.keysProveSelector = prepared.keysProveSelector
            (documents, last) = try read.run(after: bookmark, reader: reader, stats: &stats)
        } else {
            throw MangoError(status: 500, error: "unknown_error", reason: "no reader for the index \(plan.index.name)")
        }
        if plan.index.type == "special" { warnings.append("No matching index found, create an index to optimize query time.") }
        stats.resultsReturned = documents.count
        if let started { stats.executionTimeMilliseconds = Double((ContinuousClock.now - started) / .microseconds(1)) / 1000 }
        if Self.examinesTooMany(stats) {
            warnings.append("The number of documents examined is high in proportion to the number of results returned. Consider adding a more specific index to improve this.")
        }
        return FindResult(
            found: documents,
            bookmark: last?.encoded ?? request.bookmark ?? "nil",
            warning: warnings.isEmpty ? nil : warnings.joined(separator: "\n"),
            executionStats: request.executionStats ? stats : nil)
    }

    /// How `request` would run: CouchDB's `_explain` response.
    /// - Parameter databaseName: The name `explain` reports as `dbname`.
    package func explain(_ request: FindRequest, indexes: [MangoIndex] = [.allDocuments], databaseName: String) throws -> JSONValue {
        let selector = try MangoSelector(request.selector)
        _ = try FieldProjection(request.fields)
        let scope = PartitionScope(databaseIsPartitioned: databaseIsPartitioned, partition: request.partition)
        let plan: QueryPlanner.Plan
        do {
            plan = try scope.plan(try MangoSelector(scope.selector(request.selector)).normalized, sort: request.sort,
                                  useIndex: request.useIndex, allowFallback: request.allowFallback, indexes: indexes)
        } catch let error where error.error == "no_usable_index" {
            return try Explanation.explainWithoutIndex(request, selector: selector.normalized, indexes: scope.indexes(indexes),
                                                       databaseName: databaseName)
        }
        return Explanation.explain(request, plan: plan, selector: selector.normalized, indexes: indexes, databaseName: databaseName, scope: scope)
    }

    /// `mango_cursor:invalid_index_warning/2`.
    static func unusedIndexWarning(_ useIndex: [String]) -> String {
        let design = MangoIndex.designDocumentName(useIndex[0])
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
