package import SetteeCore

extension QueryPlanner.Plan {
    /// Whether this plan, made for `selector` (normalized) over `indexes`,
    /// holds for every selector of the same shape: the same fields and
    /// operators, arrays of the same lengths, the same `true`, `false` and
    /// `null`, only other strings and numbers (see ``reused(for:)``).
    ///
    /// Which index serves a selector depends on its fields and operators
    /// alone, but for three things its values decide: a field whose
    /// conditions allow nothing (`{"$gt": 5, "$lt": 3}`) is the only range
    /// the planner ranks by, a selector that is an empty `$or` or `$in` reads
    /// nothing, and what an array index reads depends on the values of its
    /// conditions. A plan is kept for its shape only without the first two,
    /// and when no array index was in the list.
    package func isReusable(for selector: JSONValue, indexes: [MangoIndex]) -> Bool {
        guard arrayLookup == nil, !indexes.contains(where: { $0.type == "array" }),
              !QueryPlanner.isNoOp(selector), !ranges.contains(.empty) else { return false }
        return !QueryPlanner.fieldRanges(selector).contains { $0.range == .empty }
    }

    /// This plan for another selector (normalized) of the shape of the one it
    /// was made for, when ``isReusable(for:indexes:)`` said so: the same
    /// index, the ranges of its leading columns that selector's values
    /// allow. Nil when those values allow nothing on some field: the planner
    /// ranks the indexes by that field alone then, so the plan is made again.
    package func reused(for selector: JSONValue) -> QueryPlanner.Plan? {
        let fieldRanges = QueryPlanner.fieldRanges(selector)
        if QueryPlanner.isNoOp(selector) || fieldRanges.contains(where: { $0.range == .empty }) { return nil }
        let prefix = QueryPlanner.compositePrefix(index.fields.map(\.field), fieldRanges)
        // The same shape constrains the same fields: a prefix as long as this plan's.
        guard prefix.count == ranges.count else { return nil }
        var plan = self
        plan.ranges = prefix
        return plan
    }

    /// The plan for a selector of implicit equalities (`{"field": value, …}`)
    /// of the same fields as the one it was made for: each leading column's
    /// range is its equality to that field's value in `equalities`.
    func substituting(_ equalities: [String: JSONValue]) -> QueryPlanner.Plan {
        var plan = self
        for (position, column) in index.fields.prefix(ranges.count).enumerated() {
            guard let value = equalities[column.field] else { continue }
            plan.ranges[position] = .range(low: .value(value), lowInclusive: true, high: .value(value), highInclusive: true)
        }
        return plan
    }
}
