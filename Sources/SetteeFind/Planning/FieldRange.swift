package import SetteeCore

/// The values an index column may take under a selector, as CouchDB's
/// planner narrows them (`mango_idx_view:range/2`): a low and a high bound,
/// each inclusive or not, or nothing at all.
package enum FieldRange: Equatable, Sendable {
    /// Nothing matches: the selector contradicts itself on this field.
    case empty
    case range(low: Bound, lowInclusive: Bool, high: Bound, highInclusive: Bool)

    /// A bound: below or above every JSON value, or a value.
    package enum Bound: Equatable, Sendable {
        case minimum
        case maximum
        case value(JSONValue)
    }

    /// Every value (`$gt` the minimum, `$lt` the maximum).
    package static let everything = FieldRange.range(low: .minimum, lowInclusive: false, high: .maximum, highInclusive: false)

    /// Whether this is one value (`$eq`).
    package var equalValue: JSONValue? {
        if case .range(.value(let low), true, .value(let high), true) = self, CollationKey.compare(low, high, mode: .unicode) == 0 { return low }
        return nil
    }

    /// `mango_idx_view:range/3`: the range for `field` under a normalized selector.
    package static func of(_ field: String, in selector: JSONValue) -> FieldRange {
        narrow(.everything, field: field, selector: selector)
    }

    private static func narrow(_ current: FieldRange, field: String, selector: JSONValue) -> FieldRange {
        guard case .range = current, case .object(let members) = selector, members.count == 1 else { return current }
        let (key, argument) = members[0]
        if key == "$and" {
            var range = current
            for element in argument.arrayValue ?? [] {
                range = narrow(range, field: field, selector: element)
                if range == .empty { return .empty }
            }
            return range
        }
        guard key == field, case .object(let condition) = argument, condition.count == 1 else { return current }
        return apply(condition[0].key, condition[0].value, to: current)
    }

    private enum Position { case min, low, mid, high, max }

    private static func compare(_ a: Bound, _ b: Bound) -> Int {
        switch (a, b) {
        case (.minimum, .minimum), (.maximum, .maximum): return 0
        case (.minimum, _), (_, .maximum): return -1
        case (_, .minimum), (.maximum, _): return 1
        case (.value(let x), .value(let y)): return CollationKey.compare(x, y, mode: .unicode)
        }
    }

    private static func position(_ low: Bound, _ argument: Bound, _ high: Bound) -> Position {
        let toLow = compare(argument, low)
        if toLow < 0 { return .min }
        if toLow == 0 { return .low }
        let toHigh = compare(argument, high)
        return toHigh < 0 ? .mid : (toHigh == 0 ? .high : .max)
    }

    /// One comparison operator applied to the range so far (`range/5`).
    private static func apply(_ operation: String, _ argument: JSONValue, to current: FieldRange) -> FieldRange {
        guard case .range(let low, let lowInclusive, let high, let highInclusive) = current else { return .empty }
        let value = Bound.value(argument)
        // `$eq` on either side is written inclusive on both.
        let lowIsEqualOrGTE = lowInclusive
        let highIsEqualOrLTE = highInclusive
        let equal = FieldRange.range(low: value, lowInclusive: true, high: value, highInclusive: true)
        switch operation {
        case "$beginsWith":
            guard case .string(let prefix) = argument else { return current }
            let widened = apply("$gte", argument, to: current)
            return apply("$lte", .string(prefix + "\u{FFFF}"), to: widened)
        case "$lt":
            switch position(low, value, high) {
            case .min, .low: return .empty
            case .mid, .high: return .range(low: low, lowInclusive: lowInclusive, high: value, highInclusive: false)
            case .max: return current
            }
        case "$lte":
            switch position(low, value, high) {
            case .min: return .empty
            case .low: return lowIsEqualOrGTE ? equal : .empty
            case .mid: return .range(low: low, lowInclusive: lowInclusive, high: value, highInclusive: true)
            case .high, .max: return current
            }
        case "$eq":
            switch position(low, value, high) {
            case .min, .max: return .empty
            case .low: return lowIsEqualOrGTE ? equal : .empty
            case .mid: return equal
            case .high: return highIsEqualOrLTE ? equal : .empty
            }
        case "$gte":
            switch position(low, value, high) {
            case .min, .low: return current
            case .mid: return .range(low: value, lowInclusive: true, high: high, highInclusive: highInclusive)
            case .high: return highIsEqualOrLTE ? equal : .empty
            case .max: return .empty
            }
        case "$gt":
            switch position(low, value, high) {
            case .min: return current
            case .low, .mid: return .range(low: value, lowInclusive: false, high: high, highInclusive: highInclusive)
            case .high, .max: return .empty
            }
        default:
            // Applied after the scan, as a filter.
            return current
        }
    }
}
