import SetteeCore

extension QueryPlanner.Plan {
    /// Whether every row of the plan's JSON index in its key range matches
    /// `selector` (normalized), but for rows on a bound the range leaves out
    /// (``excludedKeyPrefixes``), so that a document read through a row
    /// whose key is the document's current one needs no match: the selector
    /// is an `$eq` on each leading column the ranges bound, but for the last
    /// of them, which may have a range instead (at most one of `$gt` and
    /// `$gte`, one of `$lt` and `$lte`), and nothing else. The index's keys
    /// compare by the same collation as those operators do.
    ///
    /// Not on `_id`, which the operators compare in raw order (two ids that
    /// collate equal are not equal); not for an array index, whose keys are
    /// elements; not for a partition query, whose selector has a condition on
    /// `_id` (a partitioned index's keys begin with the partition, which
    /// ``FieldRange/excludedKeyPrefixes(_:)`` leaves out).
    func keysProve(_ selector: JSONValue) -> Bool {
        guard index.type == "json", let lastRange = ranges.last, case .range = lastRange,
              ranges.dropLast().allSatisfy({ $0.equalValue != nil }) else { return false }
        let columns = index.fields.prefix(ranges.count).map(\.field)
        guard Set(columns).count == ranges.count, !columns.contains("_id"), let last = columns.last else { return false }
        var equalities = Set(columns.dropLast())
        var lastOperators: [String] = []
        func check(_ selector: JSONValue) -> Bool {
            guard case .object(let members) = selector, members.count == 1 else { return false }
            let (key, argument) = members[0]
            if key == "$and" {
                guard case .array(let conjuncts) = argument else { return false }
                return conjuncts.allSatisfy(check)
            }
            guard case .object(let condition) = argument, condition.count == 1 else { return false }
            if key == last {
                lastOperators.append(condition[0].key)
                return true
            }
            // Each column once: a second condition on it is not proven by the first.
            return condition[0].key == "$eq" && equalities.remove(key) != nil
        }
        guard check(selector), equalities.isEmpty else { return false }
        if lastOperators == ["$eq"] { return true }
        let lower = lastOperators.count { $0 == "$gt" || $0 == "$gte" }
        let upper = lastOperators.count { $0 == "$lt" || $0 == "$lte" }
        return lower + upper == lastOperators.count && lower <= 1 && upper <= 1 && !lastOperators.isEmpty
    }
}

extension FieldRange {
    /// Whether no bound of `ranges` holds a number of 2^53 or more in
    /// magnitude: a key's encoding holds a number as its `Double`, so an
    /// integer that rounds to such a bound's double has the bound's encoding
    /// though it is another value (``NumberOrder``). Rows read for such
    /// bounds are matched.
    static func boundsAreExact(_ ranges: [FieldRange]) -> Bool {
        func isExact(_ value: JSONValue) -> Bool {
            switch value {
            case .number(let number, _): number.magnitude < 9_007_199_254_740_992
            case .array(let elements): elements.allSatisfy(isExact)
            case .object(let members): members.allSatisfy { isExact($0.value) }
            case .null, .bool, .string: true
            }
        }
        return ranges.allSatisfy { range in
            guard case .range(let low, _, let high, _) = range else { return true }
            for case .value(let value) in [low, high] where !isExact(value) { return false }
            return true
        }
    }

    /// For ranges a plan's keys prove (`QueryPlanner.Plan.keysProve(_:)`):
    /// the encodings of the keys' leading columns on a bound the last range
    /// leaves out (`$gt`, `$lt`), without the array's end marker. A row's
    /// encoded key starts with one exactly when its column collates equal to
    /// that bound (each value's encoding is self-delimiting).
    static func excludedKeyPrefixes(_ ranges: [FieldRange]) -> [[UInt8]] {
        guard case .range(let low, let lowInclusive, let high, let highInclusive)? = ranges.last else { return [] }
        let equal = ranges.dropLast().compactMap(\.equalValue)
        var prefixes: [[UInt8]] = []
        for (bound, inclusive) in [(low, lowInclusive), (high, highInclusive)] where !inclusive {
            guard case .value(let value) = bound else { continue }
            var key = CollationKey.encode(.array(equal + [value]), mode: .unicode)
            key.removeLast()
            prefixes.append(key)
        }
        return prefixes
    }
}
