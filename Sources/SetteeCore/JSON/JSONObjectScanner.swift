/// A top-level member of a JSON object, located in the scanned bytes.
package struct JSONObjectMember: Sendable, Equatable {
    /// The decoded key.
    package var key: String
    /// The key's bytes, quotes included.
    package var keyRange: Range<Int>
    /// Exactly the value's bytes, without surrounding whitespace.
    package var valueRange: Range<Int>

    /// A member with the given key and byte ranges.
    package init(key: String, keyRange: Range<Int>, valueRange: Range<Int>) {
        self.key = key
        self.keyRange = keyRange
        self.valueRange = valueRange
    }
}

/// Validates a JSON object and lists its top-level members without building a tree.
///
/// The document store validates every document it imports with this; only
/// members it needs are then materialised, with
/// `JSONParser.parse(UnsafeRawBufferPointer(rebasing: bytes[member.valueRange]))`.
package enum JSONObjectScanner {
    /// Validates that `bytes` is exactly one JSON object (surrounding whitespace
    /// allowed) and returns its top-level members in order.
    ///
    /// Nested values are validated as strictly as `JSONParser` does (UTF-8, escapes,
    /// numbers and their range, depth) but not materialised. Validation is
    /// iterative, so any nesting beyond `maximumDepth` ends in an error, never in
    /// a stack overflow.
    ///
    /// - Throws: `JSONScanError.notAnObject` for valid JSON that is not an object,
    ///   `JSONScanError.malformed` for anything invalid.
    package static func scan(
        _ bytes: UnsafeRawBufferPointer,
        maximumDepth: Int = JSONParser.defaultMaximumDepth
    ) throws(JSONScanError) -> [JSONObjectMember] {
        var lexer = JSONLexer(bytes)
        lexer.skipWhitespace()
        if !lexer.next(is: UInt8(ascii: "{")) {
            throw classifyNonObject(&lexer, maximumDepth: maximumDepth)
        }
        do throws(JSONParseError) {
            return try scanMembers(&lexer, maximumDepth: maximumDepth)
        } catch {
            throw .malformed(error)
        }
    }

    /// Appends to `table`, for each top-level member of `bytes` (a JSON
    /// object already known to be valid: a stored document), in order, five
    /// numbers: where its key's text starts and ends (inside the quotes),
    /// 1 when the key has escapes (0 otherwise), where its value starts and
    /// ends. Keys are not decoded, values are skipped, not read.
    package static func memberTable(of bytes: UnsafeRawBufferPointer, into table: inout [Int32]) throws(JSONParseError) {
        var lexer = JSONLexer(bytes)
        lexer.skipWhitespace()
        guard lexer.next(is: UInt8(ascii: "{")) else { throw lexer.unexpected() }
        lexer.position &+= 1
        lexer.skipWhitespace()
        if lexer.next(is: UInt8(ascii: "}")) { return }
        repeat {
            let key = try lexer.skipKey()
            lexer.skipWhitespace()
            let valueStart = lexer.position
            try lexer.skipValue(depth: 1, maximumDepth: JSONParser.defaultMaximumDepth)
            table.append(Int32(key.range.lowerBound + 1))
            table.append(Int32(key.range.upperBound - 1))
            table.append(key.hasEscapes ? 1 : 0)
            table.append(Int32(valueStart))
            table.append(Int32(lexer.position))
        } while try lexer.skipElementSeparator(closing: UInt8(ascii: "}"))
    }

    /// The key of a member ``memberTable(of:into:)`` found, decoded.
    package static func decodedKey(in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> String {
        JSONLexer(bytes).decodeString(from: start - 1, to: end + 1, hasEscapes: true)
    }

    /// Scans the object at `lexer.position` through to the end of input.
    private static func scanMembers(_ lexer: inout JSONLexer, maximumDepth: Int) throws(JSONParseError) -> [JSONObjectMember] {
        guard maximumDepth >= 1 else { throw lexer.depthError(maximumDepth) }
        lexer.position &+= 1
        lexer.skipWhitespace()
        var members: [JSONObjectMember] = []
        if lexer.next(is: UInt8(ascii: "}")) {
            lexer.position &+= 1
        } else {
            members.reserveCapacity(16)
            repeat {
                let key = try lexer.skipKey()
                lexer.skipWhitespace()
                let valueStart = lexer.position
                try lexer.skipValue(depth: 1, maximumDepth: maximumDepth)
                members.append(JSONObjectMember(
                    key: lexer.decodeString(from: key.range.lowerBound, to: key.range.upperBound, hasEscapes: key.hasEscapes),
                    keyRange: key.range,
                    valueRange: valueStart..<lexer.position
                ))
            } while try lexer.skipElementSeparator(closing: UInt8(ascii: "}"))
        }
        try lexer.expectEnd()
        return members
    }

    /// The error for input that does not start with `{`: `notAnObject` if it is
    /// otherwise valid JSON, so callers can tell "wrong type" from "broken".
    private static func classifyNonObject(_ lexer: inout JSONLexer, maximumDepth: Int) -> JSONScanError {
        let found: String
        switch lexer.position < lexer.count ? lexer.byte(at: lexer.position) : 0 {
        case UInt8(ascii: "["): found = "array"
        case UInt8(ascii: "\""): found = "string"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): found = "number"
        case UInt8(ascii: "t"): found = "true"
        case UInt8(ascii: "f"): found = "false"
        case UInt8(ascii: "n"): found = "null"
        default: return .malformed(lexer.unexpected())
        }
        do throws(JSONParseError) {
            try lexer.skipValue(depth: 0, maximumDepth: maximumDepth)
            try lexer.expectEnd()
        } catch {
            return .malformed(error)
        }
        return .notAnObject(found: found)
    }
}

/// Why `JSONObjectScanner.scan` rejected its input.
package enum JSONScanError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The input is valid JSON but not an object; `found` is `array`, `string`,
    /// `number`, `true`, `false` or `null`.
    case notAnObject(found: String)
    /// The input is not valid JSON.
    case malformed(JSONParseError)

    /// A one-line explanation, with the position for malformed input.
    package var description: String {
        switch self {
        case .notAnObject(let found): "expected a JSON object, found \(found)"
        case .malformed(let error): error.description
        }
    }
}
