import SetteeCore

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
    /// some field (the request is then planned anew). A selector of implicit
    /// equalities only (`{"field": value, …}`) is not normalized again: its
    /// values take the template's values' places in the template's
    /// normalized selector and key ranges.
    /// - Throws: ``MangoError`` for the selector or the bookmark, as
    ///   ``init(_:indexes:databaseIsPartitioned:)`` does.
    package init?(_ request: FindRequest, shapedAs template: PreparedFind, databaseIsPartitioned: Bool = false) throws(MangoError) {
        let scope = PartitionScope(databaseIsPartitioned: databaseIsPartitioned, partition: request.partition)
        if scope.partition == nil, let equalities = Self.flatEqualities(request.selector),
           let normalized = Self.substituting(equalities, in: template.selector.normalized) {
            // `{"field": value, …}`: the template's normalized selector and ranges with this request's values.
            if let bookmark = request.bookmark { _ = try Bookmark(decoding: bookmark) }
            self.init(selector: try MangoSelector(normalized: normalized), projection: template.projection,
                      plan: template.plan.substituting(equalities), keysProveSelector: template.keysProveSelector)
            return
        }
        let selector = try MangoSelector(scope.selector(request.selector))
        // The fields are the template's: they are part of the shape.
        if let bookmark = request.bookmark { _ = try Bookmark(decoding: bookmark) }
        guard let plan = template.plan.reused(for: selector.normalized) else { return nil }
        // The same fields and operators: the template's keys prove this selector as they prove its own.
        self.init(selector: selector, projection: template.projection, plan: scope.readingPartitionInByteOrder(plan),
                  keysProveSelector: template.keysProveSelector)
    }

    /// The members of a selector that is only implicit equalities to strings
    /// and numbers (`{"type": "order", "customer": "c-1"}`), each field once;
    /// nil for any other.
    private static func flatEqualities(_ selector: JSONValue) -> [String: JSONValue]? {
        guard case .object(let members) = selector, !members.isEmpty else { return nil }
        var equalities: [String: JSONValue] = [:]
        for (key, value) in members {
            guard !key.isEmpty, key.utf8.first != UInt8(ascii: "$") else { return nil }
            switch value {
            case .string, .number: break
            default: return nil
            }
            // Keys compared as Swift strings would merge canonically equivalent names: such a selector is planned as usual.
            guard equalities.updateValue(value, forKey: key) == nil else { return nil }
        }
        return equalities.count == members.count ? equalities : nil
    }

    /// `normalized` (a template's, of the same shape) with each `{"field": {"$eq": …}}`
    /// taking the value `equalities` gives that field; nil when it has any other condition.
    private static func substituting(_ equalities: [String: JSONValue], in normalized: JSONValue) -> JSONValue? {
        guard case .object(let members) = normalized, members.count == 1 else { return nil }
        let (key, argument) = members[0]
        if key == "$and" {
            guard case .array(let conditions) = argument else { return nil }
            var substituted: [JSONValue] = []
            substituted.reserveCapacity(conditions.count)
            for condition in conditions {
                guard let each = substituting(equalities, in: condition) else { return nil }
                substituted.append(each)
            }
            return .object([("$and", .array(substituted))])
        }
        guard case .object(let condition) = argument, condition.count == 1, condition[0].key == "$eq",
              let value = equalities[key] else { return nil }
        return .object([(key, .object([("$eq", value)]))])
    }
}
