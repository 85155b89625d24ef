package import SetteeCore
import SetteeViews

/// CouchDB's query planner for `find` (`mango_cursor:create/4`,
/// `mango_idx:get_usable_indexes/4`, `mango_cursor_view:choose_best_index/1`):
/// which of the indexes can serve a selector and a sort, and which of those it uses.
package enum QueryPlanner {
    /// The index chosen and the ranges of its leading columns the selector allows.
    package struct Plan: Sendable {
        package var index: MangoIndex
        /// One range per leading column the selector constrains (a prefix of the columns).
        package var ranges: [FieldRange]
        /// The usable indexes in the planner's order (the chosen one first), with
        /// how many of the selector's ranges each leaves unused.
        package var ranked: [(index: MangoIndex, unusedRanges: Int)]
        /// Why each index that was not usable was not.
        package var unusable: [(index: MangoIndex, reasons: [String])]
        /// Whether `use_index` named an index that could not serve the query.
        package var ignoredUseIndex: Bool
        /// For an array index, the entries it reads.
        package var arrayLookup: ArrayLookup? = nil
    }

    /// Plans `request` (selector normalized) over `indexes` (`_all_docs` included).
    /// - Throws: CouchDB's `no_usable_index` when a sort is given and no index
    ///   serves it; `invalid_index` when `use_index` names no usable index and
    ///   `allow_fallback` is false.
    package static func plan(_ selector: JSONValue, sort: [FindRequest.SortField], useIndex: [String], allowFallback: Bool,
                             indexes: [MangoIndex]) throws(MangoError) -> Plan {
        let sortFields = sort.map(\.field)
        // Partial indexes are candidates only when named by use_index.
        let named = indexes.filter { matches($0, useIndex) }
        var candidates = indexes.filter { $0.partialFilterSelector == nil }
        for index in named where !candidates.contains(index) { candidates.append(index) }
        var usable: [MangoIndex] = []
        var unusable: [(MangoIndex, [String])] = []
        for index in candidates {
            let reasons = usabilityProblems(index, selector: selector, sortFields: sortFields)
            if reasons.isEmpty { usable.append(index) } else { unusable.append((index, reasons)) }
        }
        if usable.isEmpty {
            throw MangoError(error: "no_usable_index", reason: "No index exists for this sort, try indexing by the sort fields.")
        }
        // Without use_index, no fallback means a JSON index must serve (`mango_cursor:create/4`).
        if useIndex.isEmpty, !allowFallback, !usable.contains(where: { $0.type == "json" }) {
            throw MangoError(error: "invalid_index", reason: "You must specify an index with the `use_index` parameter.")
        }
        var chosenFrom = usable
        var ignoredUseIndex = false
        if !useIndex.isEmpty {
            let wanted = usable.filter { matches($0, useIndex) }
            if wanted.isEmpty {
                guard allowFallback else {
                    let design = MangoIndex.designDocumentName(useIndex[0])
                    throw MangoError(error: "invalid_index", reason: useIndex.count == 1
                        ? "_design/\(design) specified by `use_index` could not be found or it is not suitable."
                        : "_design/\(design), \(useIndex[1]) specified by `use_index` could not be found or it is not suitable.")
                }
                ignoredUseIndex = true
            } else {
                chosenFrom = wanted
            }
        }
        // JSON indexes first, then array indexes; `_all_docs` only when none is usable.
        let json = chosenFrom.filter { $0.type == "json" }
        let array = chosenFrom.filter { $0.type == "array" }
        if !json.isEmpty { chosenFrom = json } else if !array.isEmpty { chosenFrom = array }
        let ranges = fieldRanges(selector)
        let ranked = chosenFrom.map { index -> (index: MangoIndex, prefix: [FieldRange], unusedRanges: Int) in
            if index.type == "array" {
                // Ranked by how many of its expressions the element conditions narrow.
                var narrowed = 0
                if case .ranges(let prefix)? = ArrayLookup.of(index, in: selector)?.keys { narrowed = prefix.count }
                return (index, [], ranges.count + (index.fields.count - narrowed))
            }
            let prefix = compositePrefix(index.fields.map(\.field), ranges)
            return (index, prefix, ranges.count - prefix.count)
        }.sorted { a, b in
            if a.unusedRanges != b.unusedRanges { return a.unusedRanges < b.unusedRanges }
            if a.index.fields.count != b.index.fields.count { return a.index.fields.count < b.index.fields.count }
            let design = JSONValue.compareBytes(a.index.designDocument ?? "", b.index.designDocument ?? "")
            return design != 0 ? design < 0 : JSONValue.compareBytes(a.index.name, b.index.name) < 0
        }
        var prefix = ranked[0].prefix
        let lookup = ranked[0].index.type == "array" ? ArrayLookup.of(ranked[0].index, in: selector) : nil
        if isNoOp(selector) || lookup?.isEmpty == true { prefix = [.empty] }
        return Plan(index: ranked[0].index, ranges: prefix, ranked: ranked.map { ($0.index, $0.unusedRanges) },
                    unusable: unusable, ignoredUseIndex: ignoredUseIndex, arrayLookup: lookup)
    }

    /// Whether `index` is the one `use_index` names (`[ddoc]` or `[ddoc, name]`).
    static func matches(_ index: MangoIndex, _ useIndex: [String]) -> Bool {
        guard let design = useIndex.first, let id = index.designDocument else { return false }
        let wanted = MangoIndex.designDocumentID(design)
        return id == wanted && (useIndex.count == 1 || useIndex[1] == index.name)
    }

    /// Why `index` cannot serve the selector and sort (`is_usable/3`): empty when it can.
    static func usabilityProblems(_ index: MangoIndex, selector: JSONValue, sortFields: [String]) -> [String] {
        let columns = index.fields.map(\.field)
        if index.type == "special" {
            if sortFields.isEmpty { return [] }
            var reasons: [String] = []
            if !indexableFields(selector).contains("_id") { reasons.append("field_mismatch") }
            if !columns.starts(with: sortFields) { reasons.append("sort_order_mismatch") }
            return reasons
        }
        if index.type == "array" {
            var reasons: [String] = []
            if ArrayLookup.of(index, in: selector) == nil { reasons.append("field_mismatch") }
            if !ArrayLookup.canSort(by: sortFields) { reasons.append("sort_order_mismatch") }
            return reasons
        }
        let required = Set(columns).subtracting(sortFields).subtracting(["_id", "_rev"])
        var reasons: [String] = []
        if !hasRequiredFields(selector, required.sorted()) { reasons.append("field_mismatch") }
        if !canUseSort(columns[...], sortFields, selector) { reasons.append("sort_order_mismatch") }
        // One direction for the sort: the index's own (CouchDB reads the index backwards otherwise).
        return reasons
    }

    /// `mango_idx_view:indexable_fields/1`: the fields a normalized selector
    /// constrains in a way an index can seek (through `$and` only), sorted by
    /// bytes as `lists:usort` sorts them.
    package static func indexableFields(_ selector: JSONValue) -> [String] {
        var fields = Set<String>()
        collectIndexableFields(selector, into: &fields)
        return fields.sorted { JSONValue.compareBytes($0, $1) < 0 }
    }

    /// The operators `indexableFields` counts (made once, not per call).
    private static let seekable: Set<String> = ["$lt", "$lte", "$eq", "$gt", "$gte", "$beginsWith", "$exists"]

    private static func collectIndexableFields(_ selector: JSONValue, into fields: inout Set<String>) {
        guard case .object(let members) = selector, members.count == 1 else { return }
        let (key, argument) = members[0]
        if key == "$and" {
            for element in argument.arrayValue ?? [] { collectIndexableFields(element, into: &fields) }
            return
        }
        guard !key.hasPrefix("$"), case .object(let condition) = argument, condition.count == 1 else { return }
        if seekable.contains(condition[0].key) { fields.insert(key) }
    }

    /// `mango_idx_view:field_ranges/1`: each indexable field's range; a field
    /// whose range is empty is the only one given.
    static func fieldRanges(_ selector: JSONValue) -> [(field: String, range: FieldRange)] {
        var ranges: [(String, FieldRange)] = []
        for field in indexableFields(selector) {
            let range = FieldRange.of(field, in: selector)
            if range == .empty { return [(field, .empty)] }
            ranges.append((field, range))
        }
        return ranges
    }

    /// `mango_cursor_view:composite_prefix/2`: the ranges of the index's leading columns.
    static func compositePrefix(_ columns: [String], _ ranges: [(field: String, range: FieldRange)]) -> [FieldRange] {
        var prefix: [FieldRange] = []
        for column in columns {
            guard let range = ranges.first(where: { $0.field == column }) else { break }
            prefix.append(range.range)
        }
        return prefix
    }

    /// `mango_cursor:maybe_noop_range/2`: `{"$or": []}` and the like match nothing to scan.
    static func isNoOp(_ selector: JSONValue) -> Bool {
        guard case .object(let members) = selector, members.count == 1, members[0].value == .array([]) else { return false }
        return ["$all", "$and", "$or", "$in"].contains(members[0].key)
    }

    /// `mango_selector:has_required_fields/2`.
    static func hasRequiredFields(_ selector: JSONValue, _ required: [String]) -> Bool {
        remainder([selector], required).isEmpty
    }

    private static func remainder(_ selectors: [JSONValue], _ required: [String]) -> [String] {
        var required = required
        var rest = selectors[...]
        while let selector = rest.first, !required.isEmpty {
            rest = rest.dropFirst()
            guard case .object(let members) = selector, members.count == 1 else { continue }
            let (key, argument) = members[0]
            switch key {
            case "$and":
                required = remainder(argument.arrayValue ?? [], required)
            case "$or":
                var left: Set<String> = []
                for element in argument.arrayValue ?? [] { left.formUnion(remainder([element], required)) }
                required = required.filter(left.contains)
            default:
                if key.hasPrefix("$") { continue }
                if case .object(let condition) = argument, condition.count == 1, condition[0].key == "$exists",
                   condition[0].value == .bool(false) { continue }
                if let position = required.firstIndex(of: key) { required.remove(at: position) }
            }
        }
        return required
    }

    /// `mango_selector:is_constant_field/2`: an `$eq` condition on the field, through `$and`.
    static func isConstantField(_ selector: JSONValue, _ field: String) -> Bool {
        guard case .object(let members) = selector, members.count == 1 else { return false }
        let (key, argument) = members[0]
        if key == "$and" { return (argument.arrayValue ?? []).contains { isConstantField($0, field) } }
        guard key == field, case .object(let condition) = argument, condition.count == 1 else { return false }
        return condition[0].key == "$eq"
    }

    /// `mango_idx_view:can_use_sort/3`: the sort is a prefix of the columns,
    /// after leading columns the selector holds constant.
    static func canUseSort(_ columns: ArraySlice<String>, _ sortFields: [String], _ selector: JSONValue) -> Bool {
        if sortFields.isEmpty { return true }
        guard let first = columns.first else { return false }
        if first == sortFields[0] { return columns.starts(with: sortFields) }
        return isConstantField(selector, first) && canUseSort(columns.dropFirst(), sortFields, selector)
    }
}
