package import SetteeCore

/// What an array index reads for a selector: the entries whose keys a
/// condition on the path's elements allows. The documents of those entries
/// are candidates, each then matched against the whole selector.
///
/// An array index on path P serves, at the top of the selector (or inside
/// its `$and`), for P = `a[].b` written as nested `$elemMatch`es
/// (`{"a": {"$elemMatch": {"b": ...}}}`):
/// - `{"P": {"$elemMatch": {...}}}` when the element's conditions require
///   every expression (the element itself, `""`, without expressions): the
///   range of the leading expressions' values they allow;
/// - `{"P": {"$allMatch": {...}}}` likewise: as in CouchDB, `$allMatch`
///   holds only for a non-empty array, so a document it matches has an
///   element meeting the conditions, and so an entry in that range (an
///   array on the way to P's end may be walked by `$allMatch` too);
/// - `{"P": {"$in": [...]}}` without expressions: the entries of each value;
/// - `{"P": {"$all": [...]}}` without expressions: the documents with an
///   entry of every value.
package struct ArrayLookup: Sendable, Equatable {
    /// The keys read.
    package enum Keys: Sendable, Equatable {
        /// One range per leading expression the conditions constrain (none: every entry).
        case ranges([FieldRange])
        /// The entries whose key is one of these values (`[value]`).
        case anyOf([JSONValue])
        /// The documents with entries of each of these values.
        case allOf([JSONValue])

        /// Whether the documents are those of every value (``allOf(_:)``), not of any.
        package var isAllOf: Bool {
            if case .allOf = self { return true }
            return false
        }
    }

    /// The keys read.
    package var keys: Keys
    /// The operator served: `$elemMatch`, `$allMatch`, `$in` or `$all`.
    package var operation: String

    /// How `index` (an array index) would serve a normalized selector; nil when it cannot.
    package static func of(_ index: MangoIndex, in selector: JSONValue) -> ArrayLookup? {
        guard let name = index.arrayPath, let path = try? ArrayPath(name) else { return nil }
        return find(path.segments[...], columns: columns(of: index), in: selector)
    }

    /// The columns of an array index's keys: its expressions, or the element itself (`""`).
    static func columns(of index: MangoIndex) -> [String] {
        index.fields.isEmpty ? [""] : index.fields.map(\.field)
    }

    private static func find(_ segments: ArraySlice<FieldPath>, columns: [String], in selector: JSONValue) -> ArrayLookup? {
        guard let segment = segments.first, case .object(let members) = selector, members.count == 1 else { return nil }
        let (key, argument) = members[0]
        if key == "$and" {
            for element in argument.arrayValue ?? [] {
                if let found = find(segments, columns: columns, in: element) { return found }
            }
            return nil
        }
        guard !key.hasPrefix("$"), (try? FieldPath(key))?.parts == segment.parts,
              case .object(let condition) = argument, condition.count == 1 else { return nil }
        if segments.count > 1 {
            // Either holds only when some element of the array holds the rest (`$allMatch` is false for `[]`).
            guard condition[0].key == "$elemMatch" || condition[0].key == "$allMatch" else { return nil }
            return find(segments.dropFirst(), columns: columns, in: condition[0].value)
        }
        return lastSegment(argument, columns: columns)
    }

    /// The lookup for the condition on the arrays at the path's end
    /// (`{"$elemMatch": {...}}`, `{"$allMatch": {...}}`, `{"$in": [...]}`, `{"$all": [...]}`), normalized.
    static func lastSegment(_ condition: JSONValue, columns: [String]) -> ArrayLookup? {
        guard case .object(let members) = condition, members.count == 1 else { return nil }
        let (operation, argument) = members[0]
        switch operation {
        case "$elemMatch", "$allMatch":
            // `$allMatch` needs a non-empty array whose every element meets the
            // conditions: its documents are among those of `$elemMatch`'s entries.
            guard QueryPlanner.hasRequiredFields(argument, columns) else { return nil }
            let ranges = QueryPlanner.compositePrefix(columns, QueryPlanner.fieldRanges(argument))
            return ArrayLookup(keys: .ranges(ranges), operation: operation)
        case "$in":
            guard columns == [""], case .array(let values) = argument else { return nil }
            return ArrayLookup(keys: .anyOf(values), operation: operation)
        case "$all":
            // `{"$all": [[...]]}` also matches an array equal to its one argument, which no entry is.
            guard columns == [""], case .array(let values) = argument else { return nil }
            if values.count == 1, case .array = values[0] { return nil }
            return ArrayLookup(keys: .allOf(values), operation: operation)
        default:
            return nil
        }
    }

    /// Whether the selector allows no entry at all.
    package var isEmpty: Bool {
        switch keys {
        case .ranges(let ranges): ranges.contains(.empty)
        case .anyOf(let values), .allOf(let values): values.isEmpty
        }
    }
}

extension ArrayLookup {
    /// Whether an array index's read returns its documents in the order of a
    /// sort on `fields`: only `_id` (either way). Its entries are per element,
    /// so a document is at as many keys as it has elements, and no Mango sort
    /// field orders documents as their elements' keys do (a sort on the array
    /// field compares whole arrays, first elements first; a sort on a path
    /// through the array, `items.sku`, finds no value in an array). The
    /// documents it finds are read in `_id` order, as `_all_docs` holds them.
    package static func canSort(by fields: [String]) -> Bool {
        fields.isEmpty || fields == ["_id"]
    }
}
