import SetteeCore

extension QueryPlanner.Plan {
    /// Whether every row of the plan's JSON index in its key range matches
    /// `selector` (normalized), so that a document read through a row whose
    /// key is the document's current one needs no match: the selector is an
    /// `$eq` on each leading column the ranges bound and nothing else, and
    /// the index's keys compare by the same collation as `$eq` does.
    ///
    /// Not on `_id`, which `$eq` compares in raw order (two ids that collate
    /// equal are not equal); not for an array index, whose keys are elements.
    func keysProve(_ selector: JSONValue) -> Bool {
        guard index.type == "json", !ranges.isEmpty, ranges.allSatisfy({ $0.equalValue != nil }) else { return false }
        var columns = Set(index.fields.prefix(ranges.count).map(\.field))
        guard columns.count == ranges.count, !columns.contains("_id") else { return false }
        func check(_ selector: JSONValue) -> Bool {
            guard case .object(let members) = selector, members.count == 1 else { return false }
            let (key, argument) = members[0]
            if key == "$and" {
                guard case .array(let conjuncts) = argument else { return false }
                return conjuncts.allSatisfy(check)
            }
            guard case .object(let condition) = argument, condition.count == 1, condition[0].key == "$eq" else { return false }
            // Each column once: a second condition on it is not proven by the first.
            return columns.remove(key) != nil
        }
        return check(selector) && columns.isEmpty
    }
}
