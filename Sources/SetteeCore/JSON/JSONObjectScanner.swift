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

    /// The range of the value of the member named `key` in `bytes`, a JSON
    /// object already known to be valid (a stored document), or nil when it
    /// has none. With the name written more than once, the last one's, as
    /// `JSON.parse` keeps it. Keys are compared without being decoded unless
    /// they hold escapes; values are skipped, not read.
    package static func valueRange(of name: UnsafeBufferPointer<UInt8>, in bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> Range<Int>? {
            var lexer = JSONLexer(bytes)
            lexer.skipWhitespace()
            guard lexer.next(is: UInt8(ascii: "{")) else { throw lexer.unexpected() }
            lexer.position &+= 1
            lexer.skipWhitespace()
            if lexer.next(is: UInt8(ascii: "}")) { return nil }
            var found: Range<Int>?
            repeat {
                let written = try lexer.skipKey()
                let content = written.range.lowerBound + 1..<written.range.upperBound - 1
                let matches = written.hasEscapes
                    ? lexer.decodeString(from: written.range.lowerBound, to: written.range.upperBound, hasEscapes: true).utf8.elementsEqual(name)
                    : content.count == name.count && bytes[content].elementsEqual(UnsafeRawBufferPointer(name))
                lexer.skipWhitespace()
                let valueStart = lexer.position
                try lexer.skipValue(depth: 1, maximumDepth: JSONParser.defaultMaximumDepth)
                if matches { found = valueStart..<lexer.position }
            } while try lexer.skipElementSeparator(closing: UInt8(ascii: "}"))
            return found
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
