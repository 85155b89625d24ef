/// A preparation reused for requests of the same shape: their selectors
/// differ from the one it was made for in their strings and numbers only
/// (the same fields, operators, array lengths, `true`, `false` and `null`),
/// and their sort, fields, `use_index`, `allow_fallback` and partition are the same.
extension PreparedFind {
    /// Whether this preparation, made over `indexes`, serves requests of its
    /// shape once their selector is compiled: see ``QueryPlanner/Plan/isReusable(for:indexes:)``.
    package func isReusable(over indexes: [MangoIndex]) -> Bool {
        plan.isReusable(for: selector.normalized, indexes: indexes)
    }

    /// Prepares `request`, a request of the shape of the one `template` was
    /// made for, with `template`'s plan: its selector checked, normalized and
    /// compiled, its bookmark checked, then the template's index with the key
    /// ranges this selector allows. Nil when its values allow nothing on
    /// some field (the request is then planned anew).
    /// - Throws: ``MangoError`` for the selector or the bookmark, as
    ///   ``init(_:indexes:databaseIsPartitioned:)`` does.
    package init?(_ request: FindRequest, shapedAs template: PreparedFind, databaseIsPartitioned: Bool = false) throws(MangoError) {
        let scope = PartitionScope(databaseIsPartitioned: databaseIsPartitioned, partition: request.partition)
        let selector = try MangoSelector(scope.selector(request.selector))
        // The fields are the template's: they are part of the shape.
        if let bookmark = request.bookmark { _ = try Bookmark(decoding: bookmark) }
        guard let plan = template.plan.reused(for: selector.normalized) else { return nil }
        // The same fields and operators: the template's keys prove this selector as they prove its own.
        self.init(selector: selector, projection: template.projection, plan: scope.readingPartitionInByteOrder(plan),
                  keysProveSelector: template.keysProveSelector)
    }
}
