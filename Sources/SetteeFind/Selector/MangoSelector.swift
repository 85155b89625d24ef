import Foundation
public import SetteeCore

/// A Mango selector: CouchDB's query language for `find`, checked and
/// normalized as CouchDB does it, ready to match documents.
///
/// ```swift
/// let selector = try MangoSelector(["type": "book", "year": ["$gte": 1960]])
/// selector.matches(try db.document("dune")!.value)
/// ```
///
/// Every CouchDB operator is known: `$eq $ne $gt $gte $lt $lte $exists
/// $type $in $nin $size $mod $regex $all $elemMatch $allMatch $keyMapMatch
/// $and $or $not $nor $beginsWith`. Comparisons use CouchDB's collation (the
/// view order: `null < false < true < numbers < strings < arrays < objects`),
/// except on `_id`, which compares in raw (byte) order as CouchDB does.
/// Fields are dotted paths (`address.city`, `tags.0`); a dot in a member's
/// name is escaped with a backslash (`"a\\.b"`).
public struct MangoSelector: Sendable {
    /// The selector as CouchDB normalizes it: operators explicit, field
    /// names pushed down to their conditions, negations pushed down to the
    /// terminal conditions. This is what `explain` shows.
    public let normalized: JSONValue
    let condition: Condition

    /// Checks and normalizes `selector`.
    /// - Throws: ``MangoError`` as CouchDB words it: `invalid_operator` for an
    ///   unknown `$` name, `bad_arg` for an operator given an argument it
    ///   does not take, `invalid_field_name`, `invalid_selector`, `not_supported`.
    public init(_ selector: JSONValue) throws(MangoError) {
        guard case .object = selector else { throw .invalidSelectorJSON(selector) }
        normalized = try SelectorNormalization.normalize(selector)
        condition = try Condition(normalized)
    }

    /// A selector already normalized (``normalized`` of another, with other values), compiled.
    init(normalized: JSONValue) throws(MangoError) {
        self.normalized = normalized
        condition = try Condition(normalized)
    }

    /// Whether `document` (a whole document, `_id` included) matches.
    public func matches(_ document: JSONValue) -> Bool {
        condition.matches(document, mode: .unicode)
    }

    /// Whether `document`, JSON text of a whole document, matches; only the
    /// fields the selector names are parsed.
    /// - Throws: When the text is not valid JSON.
    package func matches(json document: UnsafeRawBufferPointer) throws -> Bool {
        try condition.matches(json: document)
    }

    /// Whether the selector matches every document (`{}`).
    public var matchesEverything: Bool {
        if case .everything = condition { return true }
        return false
    }
}

/// A normalized selector compiled for matching: `mango_selector:match/3`'s
/// cases, with field paths split and patterns compiled once.
indirect enum Condition: @unchecked Sendable {
    case everything
    case and([Condition])
    case or([Condition])
    case not(Condition)
    /// The condition applies to the value at a path; `nil` for the value itself
    /// (an `$elemMatch` element's own condition).
    case field(FieldPath?, Condition, utf8Path: [[UInt8]])
    case elemMatch(Condition)
    case allMatch(Condition)
    case keyMapMatch(Condition)
    case compare(Comparison, JSONValue)
    case `in`([JSONValue])
    case notIn([JSONValue])
    case all([JSONValue])
    case exists(Bool)
    case type(String)
    case mod(divisor: Int, remainder: Int)
    case regex(NSRegularExpression)
    case size(Int)
    case beginsWith(String)

    enum Comparison {
        case lessThan, lessOrEqual, equal, notEqual, greaterOrEqual, greaterThan
    }

    /// Compiles a normalized selector.
    init(_ selector: JSONValue) throws(MangoError) {
        guard case .object(let members) = selector else { throw .badField(selector) }
        if members.isEmpty {
            self = .everything
            return
        }
        guard members.count == 1 else { throw .badField(selector) }
        let (key, argument) = members[0]
        func conditions() throws(MangoError) -> [Condition] {
            var compiled: [Condition] = []
            for element in argument.arrayValue ?? [] { compiled.append(try Condition(element)) }
            return compiled
        }
        switch key {
        case "$and": self = .and(try conditions())
        case "$or": self = .or(try conditions())
        case "$nor": self = .not(.or(try conditions()))
        case "$not": self = .not(try Condition(argument))
        case "$elemMatch": self = .elemMatch(try Condition(argument))
        case "$allMatch": self = .allMatch(try Condition(argument))
        case "$keyMapMatch": self = .keyMapMatch(try Condition(argument))
        case "$lt": self = .compare(.lessThan, argument)
        case "$lte": self = .compare(.lessOrEqual, argument)
        case "$eq": self = .compare(.equal, argument)
        case "$ne": self = .compare(.notEqual, argument)
        case "$gte": self = .compare(.greaterOrEqual, argument)
        case "$gt": self = .compare(.greaterThan, argument)
        case "$in": self = .in(argument.arrayValue ?? [])
        case "$nin": self = .notIn(argument.arrayValue ?? [])
        case "$all": self = .all(argument.arrayValue ?? [])
        case "$exists": self = .exists(argument.boolValue ?? false)
        case "$type": self = .type(argument.stringValue ?? "")
        case "$size": self = .size(SelectorNormalization.integer(argument) ?? -1)
        case "$beginsWith": self = .beginsWith(argument.stringValue ?? "")
        case "$mod":
            let pair = argument.arrayValue ?? []
            guard pair.count == 2, let divisor = SelectorNormalization.integer(pair[0]),
                  let remainder = SelectorNormalization.integer(pair[1]), divisor != 0
            else { throw .badArgument(key, argument) }
            self = .mod(divisor: divisor, remainder: remainder)
        case "$regex":
            guard let pattern = argument.stringValue, let regex = try? MangoRegex.compile(pattern)
            else { throw .badArgument(key, argument) }
            self = .regex(regex)
        case "":
            self = .field(nil, try Condition(argument), utf8Path: [])
        default:
            if key.hasPrefix("$") { throw .invalidOperator(key) }
            let path = try FieldPath(key)
            self = .field(path, try Condition(argument), utf8Path: path.utf8Parts)
        }
    }

    /// `mango_selector:match/3`: whether `value` matches, comparing in `mode`
    /// (raw order below `_id`, collation elsewhere).
    func matches(_ value: JSONValue, mode: CollationMode) -> Bool {
        switch self {
        case .everything:
            return true
        case .and(let conditions):
            return conditions.allSatisfy { $0.matches(value, mode: mode) }
        case .or(let conditions):
            return conditions.isEmpty || conditions.contains { $0.matches(value, mode: mode) }
        case .not(let condition):
            return !condition.matches(value, mode: mode)
        case .field(nil, let condition, _):
            return condition.matches(value, mode: mode)
        case .field(let path?, let condition, _):
            switch path.lookup(in: value) {
            case .found(let found):
                return condition.matches(found, mode: path.isID ? .raw : mode)
            case .notFound:
                if case .exists(false) = condition { return true }
                return false
            case .badPath:
                return false
            }
        case .elemMatch(let condition):
            guard case .array(let elements) = value else { return false }
            return elements.contains { condition.matches($0, mode: mode) }
        case .allMatch(let condition):
            guard case .array(let elements) = value, !elements.isEmpty else { return false }
            return elements.allSatisfy { condition.matches($0, mode: mode) }
        case .keyMapMatch(let condition):
            guard case .object(let members) = value else { return false }
            return members.contains { condition.matches(.string($0.key), mode: mode) }
        case .compare(let comparison, let argument):
            let order = CollationKey.compare(value, argument, mode: mode)
            switch comparison {
            case .lessThan: return order < 0
            case .lessOrEqual: return order <= 0
            case .equal: return order == 0
            case .notEqual: return order != 0
            case .greaterOrEqual: return order >= 0
            case .greaterThan: return order > 0
            }
        case .in(let arguments):
            if case .array(let elements) = value {
                return arguments.contains { argument in elements.contains { CollationKey.compare($0, argument, mode: mode) == 0 } }
            }
            return arguments.contains { CollationKey.compare(value, $0, mode: mode) == 0 }
        case .notIn(let arguments):
            if arguments.isEmpty { return true }
            if case .array = value { return !Condition.in(arguments).matches(value, mode: mode) }
            return arguments.allSatisfy { CollationKey.compare(value, $0, mode: mode) != 0 }
        case .all(let arguments):
            guard !arguments.isEmpty, case .array(let elements) = value else { return false }
            if arguments.allSatisfy({ elements.contains($0) }) { return true }
            if arguments.count == 1, case .array(let only) = arguments[0] { return only == elements }
            return false
        case .exists(let shouldExist):
            // Reached only for a value that is there.
            return shouldExist
        case .type(let name):
            return Condition.typeName(value) == name
        case .mod(let divisor, let remainder):
            guard case .number(let number, _) = value, let integer = SelectorNormalization.integer(.number(number)) else { return false }
            return integer % divisor == remainder
        case .regex(let regex):
            guard case .string(let text) = value else { return false }
            return MangoRegex.matches(regex, text)
        case .size(let size):
            guard case .array(let elements) = value else { return false }
            return elements.count == size
        case .beginsWith(let prefix):
            guard case .string(let text) = value else { return false }
            return text.utf8.starts(with: prefix.utf8)
        }
    }

    /// ``matches(_:mode:)`` on a whole document's JSON text: the boolean
    /// operators and field conditions at the top are worked out on the text,
    /// and only the values the conditions test are parsed.
    func matches(json document: UnsafeRawBufferPointer) throws -> Bool {
        switch self {
        case .everything:
            return true
        case .and(let conditions):
            for condition in conditions where try !condition.matches(json: document) { return false }
            return true
        case .or(let conditions):
            if conditions.isEmpty { return true }
            for condition in conditions where try condition.matches(json: document) { return true }
            return false
        case .not(let condition):
            return try !condition.matches(json: document)
        case .field(let path?, let condition, let utf8Path):
            switch try JSONMemberLocator.locate(utf8Path, in: document) {
            case .found(let range):
                let text = UnsafeRawBufferPointer(rebasing: document[range])
                let value = try JSONParser.parse(text)
                if condition.readsNumberForms {
                    return condition.matches(value, form: try Condition.numberForms(text), mode: path.isID ? .raw : .unicode)
                }
                return condition.matches(value, mode: path.isID ? .raw : .unicode)
            case .notFound:
                if case .exists(false) = condition { return true }
                return false
            case .badPath:
                return false
            }
        default:
            if readsNumberForms { return matches(try JSONParser.parse(document), form: try Condition.numberForms(document), mode: .unicode) }
            return matches(try JSONParser.parse(document), mode: .unicode)
        }
    }

    /// `mango_json:type/1`.
    static func typeName(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}
