/// What `find` works out from a request before it reads anything: the
/// selector checked, normalized and compiled, the fields to return, and the
/// plan over a list of indexes. It depends on the request's selector, sort,
/// fields, `use_index`, `allow_fallback` and partition, on whether the
/// database is partitioned, and on that list only: a request
/// that differs in nothing else (limit, skip, bookmark, update…) can use it.
package struct PreparedFind: Sendable {
    let selector: MangoSelector
    let projection: FieldProjection
    /// The index chosen, its key ranges, and the others ranked.
    package let plan: QueryPlanner.Plan
    /// Whether a document read through the plan's index matches without being
    /// matched, when the index is current (see `QueryPlanner.Plan.keysProve(_:)`).
    let keysProveSelector: Bool

    /// Prepares `request` over `indexes`, in a database partitioned or not
    /// (a partition query matches the partition's documents, with its indexes).
    /// - Throws: ``MangoError`` as ``Finder/find(_:indexes:reader:)`` does, in
    ///   the same order: the selector, the fields, the bookmark, then the plan.
    package init(_ request: FindRequest, indexes: [MangoIndex], databaseIsPartitioned: Bool = false) throws(MangoError) {
        let scope = PartitionScope(databaseIsPartitioned: databaseIsPartitioned, partition: request.partition)
        selector = try MangoSelector(scope.selector(request.selector))
        projection = try FieldProjection(request.fields)
        // Checked here too, so that a bad bookmark is said before a query no index serves.
        if let bookmark = request.bookmark { _ = try Bookmark(decoding: bookmark) }
        plan = try scope.plan(selector.normalized, sort: request.sort, useIndex: request.useIndex,
                              allowFallback: request.allowFallback, indexes: indexes)
        keysProveSelector = plan.keysProve(selector.normalized)
    }

    /// A preparation whose plan is proven as `keysProveSelector` says (a template's, for a selector of its shape).
    init(selector: MangoSelector, projection: FieldProjection, plan: QueryPlanner.Plan, keysProveSelector: Bool) {
        self.selector = selector
        self.projection = projection
        self.plan = plan
        self.keysProveSelector = keysProveSelector
    }
}
