/// A strict RFC 8259 parser from UTF-8 bytes to `JSONValue`.
///
/// Accepts exactly one value surrounded by optional whitespace (space, tab, CR,
/// LF). String contents must be valid UTF-8 without raw control characters;
/// a `\u` escape of an unpaired surrogate decodes to U+FFFD, since a Swift
/// `String` cannot hold it. Numbers become `Double`s, correctly rounded; numbers
/// too large for a `Double` are rejected.
///
/// The parser is iterative (an explicit stack of open containers), so its stack
/// use does not grow with nesting.
package enum JSONParser {
    /// The default limit on nested arrays and objects.
    package static let defaultMaximumDepth = 1000

    /// Parses `bytes` as exactly one JSON value.
    ///
    /// - Parameter maximumDepth: the most arrays and objects that may be open at once.
    package static func parse(
        _ bytes: UnsafeRawBufferPointer,
        maximumDepth: Int = defaultMaximumDepth
    ) throws(JSONParseError) -> JSONValue {
        var lexer = JSONLexer(bytes)
        // Elements and keys of all open containers, flat; each frame remembers where its own elements begin.
        var values: [JSONValue] = []
        var keys: [String] = []
        var frames: [Frame] = []

        nextValue: while true {
            var value: JSONValue
            lexer.skipWhitespace()
            guard lexer.position < lexer.count else { throw lexer.unexpected() }
            let first = lexer.byte(at: lexer.position)
            switch first {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard frames.count < maximumDepth else { throw lexer.depthError(maximumDepth) }
                let isObject = first == UInt8(ascii: "{")
                lexer.position &+= 1
                lexer.skipWhitespace()
                if lexer.next(is: isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    lexer.position &+= 1
                    value = isObject ? .object([]) : .array([])
                } else {
                    frames.append(Frame(isObject: isObject, valuesStart: values.count, keysStart: keys.count))
                    if isObject { keys.append(try parseKey(&lexer)) }
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                let start = lexer.position
                let hasEscapes = try lexer.skipString()
                value = .string(lexer.decodeString(from: start, to: lexer.position, hasEscapes: hasEscapes))
            case UInt8(ascii: "t"):
                try lexer.skipLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try lexer.skipLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try lexer.skipLiteral("null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = lexer.position
                let number = try lexer.scanNumber(materialize: true)
                value = .number(number, literal: lexer.numberLiteral(from: start))
            default:
                throw lexer.unexpected()
            }

            // A value is complete: add it to its container, closing every container that ends here.
            while let frame = frames.last {
                values.append(value)
                lexer.skipWhitespace()
                guard lexer.position < lexer.count else { throw lexer.unexpected() }
                let next = lexer.byte(at: lexer.position)
                if next == UInt8(ascii: ",") {
                    lexer.position &+= 1
                    if frame.isObject { keys.append(try parseKey(&lexer)) }
                    continue nextValue
                }
                guard next == (frame.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { throw lexer.unexpected() }
                lexer.position &+= 1
                frames.removeLast()
                value = frame.isObject
                    ? .object(closeObject(frame, values: &values, keys: &keys))
                    : .array(closeArray(frame, values: &values))
            }
            try lexer.expectEnd()
            return value
        }
    }

    /// Parses the bytes of `bytes` as exactly one JSON value.
    package static func parse(
        _ bytes: some Collection<UInt8>,
        maximumDepth: Int = defaultMaximumDepth
    ) throws(JSONParseError) -> JSONValue {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try parse(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth) }
        }
        if let result { return try result.get() }
        return try parse(Array(bytes), maximumDepth: maximumDepth)
    }

    /// Parses the UTF-8 of `text` as exactly one JSON value.
    package static func parse(
        _ text: String,
        maximumDepth: Int = defaultMaximumDepth
    ) throws(JSONParseError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONParseError) in try parse(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth) }
        }
        return try result.get()
    }

    // MARK: Containers

    /// An open array or object: where its elements (and keys) begin in the shared stacks.
    private struct Frame {
        var isObject: Bool
        var valuesStart: Int
        var keysStart: Int
    }

    private static func parseKey(_ lexer: inout JSONLexer) throws(JSONParseError) -> String {
        let key = try lexer.skipKey()
        return lexer.decodeString(from: key.range.lowerBound, to: key.range.upperBound, hasEscapes: key.hasEscapes)
    }

    private static func closeArray(_ frame: Frame, values: inout [JSONValue]) -> [JSONValue] {
        let count = values.count - frame.valuesStart
        let elements = [JSONValue](unsafeUninitializedCapacity: count) { elements, initialized in
            values.withUnsafeMutableBufferPointer { values in
                for index in 0..<count {
                    elements.initializeElement(at: index, to: take(&values[frame.valuesStart + index], leaving: .null))
                }
            }
            initialized = count
        }
        values.removeSubrange(frame.valuesStart...)
        return elements
    }

    private static func closeObject(
        _ frame: Frame,
        values: inout [JSONValue],
        keys: inout [String]
    ) -> [(key: String, value: JSONValue)] {
        let count = values.count - frame.valuesStart
        let members = [(key: String, value: JSONValue)](unsafeUninitializedCapacity: count) { members, initialized in
            values.withUnsafeMutableBufferPointer { values in
                keys.withUnsafeMutableBufferPointer { keys in
                    for index in 0..<count {
                        members.initializeElement(at: index, to: (
                            key: take(&keys[frame.keysStart + index], leaving: ""),
                            value: take(&values[frame.valuesStart + index], leaving: .null)
                        ))
                    }
                }
            }
            initialized = count
        }
        values.removeSubrange(frame.valuesStart...)
        keys.removeSubrange(frame.keysStart...)
        return members
    }

    /// Moves `slot`'s value out, leaving a trivial placeholder that costs nothing to
    /// destroy: closing a container then hands its elements over without retaining
    /// and releasing each one.
    @inline(__always)
    private static func take<Value>(_ slot: inout Value, leaving placeholder: Value) -> Value {
        var value = placeholder
        swap(&slot, &value)
        return value
    }

}
