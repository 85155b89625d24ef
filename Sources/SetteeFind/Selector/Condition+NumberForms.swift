package import SetteeCore

/// `$mod` matches only integers, and CouchDB's JSON decoder reads a number
/// written with a fraction or an exponent (`26.0`, `2.6e1`) as a float: so
/// `{"$mod": [5, 1]}` matches a stored `26` but not a stored `26.0`. A
/// ``JSONValue`` holds both as the same `Double`; so when a condition holds a
/// `$mod`, the value's text is read once more for how each number is written
/// (its *form*: the value with each number replaced by `true` when written
/// as a float, `false` when written as an integer), and `$mod` consults it.
/// So does `$all` with numbers among its arguments: CouchDB looks them up
/// with Erlang's exact match, where `1` is not `1.0`. Every other operator
/// compares numbers by value, as CouchDB's collation does (`26 == 26.0`), so
/// only these pay for this, and only on the values they may test.
extension Condition {
    /// Whether a `$mod` is among these conditions.
    var readsNumberForms: Bool {
        switch self {
        case .mod: true
        // `$all`'s members are found by Erlang's exact match (`lists:member/2`): `1` is not `1.0`.
        case .all(let arguments): arguments.contains(where: Self.holdsNumbers)
        case .and(let conditions), .or(let conditions): conditions.contains { $0.readsNumberForms }
        case .not(let condition), .elemMatch(let condition), .allMatch(let condition), .keyMapMatch(let condition),
             .field(_, let condition, _): condition.readsNumberForms
        default: false
        }
    }

    /// ``matches(_:mode:)`` knowing `form`, the value's numbers as written
    /// (``numberForms(_:)`` of its text): `$mod` is false for a float.
    func matches(_ value: JSONValue, form: JSONValue, mode: CollationMode) -> Bool {
        switch self {
        case .and(let conditions):
            return conditions.allSatisfy { $0.matches(value, form: form, mode: mode) }
        case .or(let conditions):
            return conditions.isEmpty || conditions.contains { $0.matches(value, form: form, mode: mode) }
        case .not(let condition):
            return !condition.matches(value, form: form, mode: mode)
        case .field(nil, let condition, _):
            return condition.matches(value, form: form, mode: mode)
        case .field(let path?, let condition, _):
            guard condition.readsNumberForms, case .found(let found) = path.lookup(in: value),
                  case .found(let foundForm) = path.lookup(in: form) else { return matches(value, mode: mode) }
            return condition.matches(found, form: foundForm, mode: path.isID ? .raw : mode)
        case .elemMatch(let condition):
            guard case .array(let elements) = value, case .array(let forms) = form, forms.count == elements.count else { return false }
            return zip(elements, forms).contains { condition.matches($0, form: $1, mode: mode) }
        case .allMatch(let condition):
            guard case .array(let elements) = value, case .array(let forms) = form, forms.count == elements.count,
                  !elements.isEmpty else { return false }
            return zip(elements, forms).allSatisfy { condition.matches($0, form: $1, mode: mode) }
        case .mod:
            if case .number = value, form == .bool(true) { return false }
            return matches(value, mode: mode)
        case .all(let arguments):
            guard !arguments.isEmpty, case .array(let elements) = value, case .array(let forms) = form, forms.count == elements.count else { return false }
            let hasAll = arguments.allSatisfy { argument in
                zip(elements, forms).contains { Self.isExactly(argument, $0, form: $1) }
            }
            // `[A] when is_list(A) -> A == Values`: arithmetic equality, where `1 == 1.0`.
            if hasAll { return true }
            if arguments.count == 1, case .array(let only) = arguments[0] { return only == elements }
            return false
        default:
            return matches(value, mode: mode)
        }
    }

    /// Whether a value holds a number (at any depth).
    private static func holdsNumbers(_ value: JSONValue) -> Bool {
        switch value {
        case .number: true
        case .array(let elements): elements.contains(where: holdsNumbers)
        case .object(let members): members.contains { holdsNumbers($0.value) }
        default: false
        }
    }

    /// Erlang's `=:=` between an argument (its integral numbers integers, as
    /// the request's JSON is read) and a stored value of that form.
    private static func isExactly(_ argument: JSONValue, _ value: JSONValue, form: JSONValue) -> Bool {
        switch (argument, value, form) {
        case (.number(let a, _), .number(let b, _), .bool(let isFloat)):
            return a == b && isFloat == (a.rounded(.towardZero) != a)
        case (.array(let a), .array(let b), .array(let forms)):
            return a.count == b.count && forms.count == b.count && zip(a, zip(b, forms)).allSatisfy { isExactly($0, $1.0, form: $1.1) }
        case (.object(let a), .object(let b), .object(let forms)):
            return a.count == b.count && forms.count == b.count
                && zip(a, zip(b, forms)).allSatisfy { $0.key == $1.0.key && isExactly($0.value, $1.0.value, form: $1.1.value) }
        default:
            return argument == value
        }
    }

    /// The form of the JSON value `text`: the same value with each number
    /// replaced by `true` when it is written with a fraction or an exponent
    /// (a float to CouchDB), `false` otherwise.
    /// - Throws: When the text is not valid JSON.
    static func numberForms(_ text: UnsafeRawBufferPointer) throws -> JSONValue {
        var rewritten: [UInt8] = []
        rewritten.reserveCapacity(text.count)
        var index = 0
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "\"") {
                // A string, copied whole: its digits are no number.
                let start = index
                index += 1
                while index < text.count, text[index] != UInt8(ascii: "\"") {
                    index += text[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                index = min(index + 1, text.count)
                rewritten.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[start..<index]))
            } else if byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                var isFloat = false
                while index < text.count {
                    let byte = text[index]
                    if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                        isFloat = true
                    } else if !(byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)) {
                        break
                    }
                    index += 1
                }
                rewritten.append(contentsOf: isFloat ? "true".utf8 : "false".utf8)
            } else {
                rewritten.append(byte)
                index += 1
            }
        }
        return try JSONParser.parse(rewritten)
    }
}

extension MangoSelector {
    /// Whether the selector holds a `$mod`, which tells a number written as
    /// a float (`26.0`) from an integer: matching a parsed value then needs
    /// its form (``numberForms(_:)``).
    package var readsNumberForms: Bool { condition.readsNumberForms }

    /// Whether `value` matches, `form` (``numberForms(_:)`` of its text)
    /// saying which of its numbers were written as floats.
    package func matches(_ value: JSONValue, form: JSONValue) -> Bool {
        condition.matches(value, form: form, mode: .unicode)
    }

    /// The JSON value `text` with each number replaced by `true` when
    /// written with a fraction or an exponent, `false` otherwise.
    /// - Throws: When the text is not valid JSON.
    package static func numberForms(_ text: UnsafeRawBufferPointer) throws -> JSONValue {
        try Condition.numberForms(text)
    }
}
