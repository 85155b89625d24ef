/// The byte-level JSON grammar shared by `JSONParser` and `JSONObjectScanner`:
/// whitespace, strings, numbers, literals and tree-less validation of whole values.
///
/// It reads straight from the caller's buffer and never tracks lines; positions
/// are turned into line and column only when an error is built.
package struct JSONLexer {
    package let bytes: UnsafeRawBufferPointer
    package let base: UnsafeRawPointer
    package let count: Int
    /// The offset of the next byte to read.
    package var position = 0

    package init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        // An empty buffer may have no address; nothing is ever read from it then.
        self.base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        self.count = bytes.count
    }

    @inline(__always)
    package func byte(at offset: Int) -> UInt8 {
        base.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// Whether the next byte is `value` (false at the end of input).
    @inline(__always)
    package func next(is value: UInt8) -> Bool {
        position < count && byte(at: position) == value
    }

    // MARK: Errors

    // Errors are built out of line: they are rare, and inlining them bloats the hot loops.
    @inline(never)
    package func error(_ reason: String, at offset: Int) -> JSONParseError {
        JSONParseError(reason, at: offset, in: bytes)
    }

    /// The error for whatever is at `position` when it cannot start or continue anything.
    @inline(never)
    package func unexpected() -> JSONParseError {
        guard position < count else { return error("unexpected end of input", at: count) }
        let value = byte(at: position)
        if value >= 0x20 && value < 0x7F {
            return error("unexpected character '\(Character(Unicode.Scalar(value)))'", at: position)
        }
        let hex = String(value, radix: 16, uppercase: true)
        return error("unexpected byte 0x\(value < 0x10 ? "0" : "")\(hex)", at: position)
    }

    @inline(never)
    package func depthError(_ maximumDepth: Int) -> JSONParseError {
        error("nesting deeper than \(maximumDepth) levels", at: position)
    }

    /// Skips trailing whitespace and fails unless that reaches the end of input.
    package mutating func expectEnd() throws(JSONParseError) {
        skipWhitespace()
        guard position == count else { throw error("trailing characters after the value", at: position) }
    }

    // MARK: Whitespace and literals

    @inline(__always)
    package mutating func skipWhitespace() {
        while position < count {
            let value = byte(at: position)
            // Everything above the space character is significant; test that first.
            guard value <= 0x20, value == 0x20 || value == 0x0A || value == 0x0D || value == 0x09 else { return }
            position &+= 1
        }
    }

    /// Moves past `literal` (`true`, `false` or `null`), which must be next.
    package mutating func skipLiteral(_ literal: StaticString) throws(JSONParseError) {
        let expected = literal.utf8Start
        for index in 0..<literal.utf8CodeUnitCount {
            guard position < count, byte(at: position) == expected[index] else { throw unexpected() }
            position &+= 1
        }
    }

    // MARK: Strings

    /// Validates the string whose opening quote is at `position` and moves past its
    /// closing quote. Returns whether it contains escapes (and so needs decoding).
    package mutating func skipString() throws(JSONParseError) -> Bool {
        let start = position
        var index = position &+ 1
        var hasEscapes = false
        while true {
            // Most string bytes are plain ASCII: test eight at a time and jump
            // straight to the first byte that needs a closer look.
            if index &+ 8 <= count {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let special = Self.specialBytes(word)
                if special == 0 {
                    index &+= 8
                    continue
                }
                index &+= special.trailingZeroBitCount &>> 3
            } else {
                guard index < count else { throw error("unterminated string", at: start) }
            }
            let value = byte(at: index)
            if value == UInt8(ascii: "\\") {
                index = try skipEscape(at: index, stringStart: start)
                hasEscapes = true
            } else if value >= 0x80 {
                index = try skipUTF8Sequence(at: index)
            } else if value == UInt8(ascii: "\"") {
                position = index &+ 1
                return hasEscapes
            } else if value < 0x20 {
                throw error("control character in string", at: index)
            } else {
                index &+= 1  // only in the last few bytes of the input
            }
        }
    }

    /// The high bit of each byte of `word` (little-endian) that is a quote, a
    /// backslash, a control character or non-ASCII — exact for the lowest such
    /// byte, which is all that is used. Each test is the classic "has a byte
    /// below n" trick; false positives can only appear above a true one.
    @inline(__always)
    package static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let quoteFound = (quote &- ones) & ~quote
        let backslashFound = (backslash &- ones) & ~backslash
        return (word | control | quoteFound | backslashFound) & highBits
    }

    /// Validates the escape at `index` and returns the offset after it.
    @inline(__always)
    package func skipEscape(at index: Int, stringStart: Int) throws(JSONParseError) -> Int {
        guard index &+ 1 < count else { throw error("unterminated string", at: stringStart) }
        switch byte(at: index &+ 1) {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
             UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return index &+ 2
        case UInt8(ascii: "u"):
            for offset in 2..<6 {
                guard index &+ offset < count else { throw error("unterminated string", at: stringStart) }
                guard Self.hexValue(byte(at: index &+ offset)) != nil else { throw error("invalid escape", at: index) }
            }
            return index &+ 6
        default:
            throw error("invalid escape", at: index)
        }
    }

    /// Validates the multi-byte UTF-8 sequence at `index` (Unicode Table 3-7: no
    /// overlongs, no surrogates, nothing above U+10FFFF) and returns the offset after it.
    @inline(__always)
    package func skipUTF8Sequence(at index: Int) throws(JSONParseError) -> Int {
        let lead = byte(at: index)
        var length = 0
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondHigh = 0x9F
        case 0xF0: length = 4; secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondHigh = 0x8F
        default: throw error("invalid UTF-8", at: index)
        }
        guard index &+ length <= count else { throw error("invalid UTF-8", at: index) }
        let second = byte(at: index &+ 1)
        guard second >= secondLow, second <= secondHigh else { throw error("invalid UTF-8", at: index) }
        for offset in 2..<length where byte(at: index &+ offset) & 0xC0 != 0x80 {
            throw error("invalid UTF-8", at: index)
        }
        return index &+ length
    }

    @inline(__always)
    package static func hexValue(_ value: UInt8) -> UInt32? {
        switch value {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(value &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(value &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(value &- UInt8(ascii: "A") &+ 10)
        default: return nil
        }
    }

    /// Decodes the string already validated by `skipString` between the quote at
    /// `start` and the one just before `end`.
    package func decodeString(from start: Int, to end: Int, hasEscapes: Bool) -> String {
        let content = UnsafeRawBufferPointer(start: base + (start &+ 1), count: end &- start &- 2)
        guard hasEscapes else { return String(decoding: content, as: UTF8.self) }
        // Every escape is at least as long as what it decodes to, so the text's length is enough.
        return String(unsafeUninitializedCapacity: content.count) { output in
            var written = 0
            var index = 0
            while index < content.count {
                let value = content[index]
                guard value == UInt8(ascii: "\\") else {
                    output[written] = value
                    written &+= 1
                    index &+= 1
                    continue
                }
                let escaped = content[index &+ 1]
                index &+= 2
                let simple: UInt8
                switch escaped {
                case UInt8(ascii: "b"): simple = 0x08
                case UInt8(ascii: "f"): simple = 0x0C
                case UInt8(ascii: "n"): simple = 0x0A
                case UInt8(ascii: "r"): simple = 0x0D
                case UInt8(ascii: "t"): simple = 0x09
                case UInt8(ascii: "u"):
                    var scalar = Self.hex4(content, at: index)
                    index &+= 4
                    if scalar >= 0xD800 && scalar <= 0xDBFF {
                        // A high surrogate only means something followed by a low one.
                        if index &+ 6 <= content.count, content[index] == UInt8(ascii: "\\"),
                           content[index &+ 1] == UInt8(ascii: "u") {
                            let low = Self.hex4(content, at: index &+ 2)
                            if low >= 0xDC00 && low <= 0xDFFF {
                                scalar = 0x10000 &+ ((scalar &- 0xD800) << 10) &+ (low &- 0xDC00)
                                index &+= 6
                            } else {
                                scalar = 0xFFFD
                            }
                        } else {
                            scalar = 0xFFFD
                        }
                    } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                        scalar = 0xFFFD
                    }
                    written = Self.encodeUTF8(scalar, into: output, at: written)
                    continue
                default: simple = escaped  // \" \\ \/
                }
                output[written] = simple
                written &+= 1
            }
            return written
        }
    }

    /// The four hex digits at `index`, already validated.
    @inline(__always)
    package static func hex4(_ content: UnsafeRawBufferPointer, at index: Int) -> UInt32 {
        var result: UInt32 = 0
        for offset in 0..<4 {
            result = result << 4 | (hexValue(content[index &+ offset]) ?? 0)
        }
        return result
    }

    @inline(__always)
    package static func encodeUTF8(_ scalar: UInt32, into output: UnsafeMutableBufferPointer<UInt8>, at index: Int) -> Int {
        switch scalar {
        case 0..<0x80:
            output[index] = UInt8(scalar)
            return index &+ 1
        case 0x80..<0x800:
            output[index] = UInt8(0xC0 | scalar >> 6)
            output[index &+ 1] = UInt8(0x80 | scalar & 0x3F)
            return index &+ 2
        case 0x800..<0x10000:
            output[index] = UInt8(0xE0 | scalar >> 12)
            output[index &+ 1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[index &+ 2] = UInt8(0x80 | scalar & 0x3F)
            return index &+ 3
        default:
            output[index] = UInt8(0xF0 | scalar >> 18)
            output[index &+ 1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            output[index &+ 2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[index &+ 3] = UInt8(0x80 | scalar & 0x3F)
            return index &+ 4
        }
    }

    /// Reads an object key with its colon: whitespace, a string, whitespace, `:`.
    /// Returns the key's quote-to-quote range and whether it has escapes.
    @inline(__always)
    package mutating func skipKey() throws(JSONParseError) -> (range: Range<Int>, hasEscapes: Bool) {
        skipWhitespace()
        guard next(is: UInt8(ascii: "\"")) else { throw unexpected() }
        let start = position
        let hasEscapes = try skipString()
        let end = position
        skipWhitespace()
        guard next(is: UInt8(ascii: ":")) else { throw unexpected() }
        position &+= 1
        return (start..<end, hasEscapes)
    }

    /// After an element of an open array or object: moves past the `,` before
    /// the next element (returning true) or past the `closing` bracket (false).
    @inline(__always)
    package mutating func skipElementSeparator(closing: UInt8) throws(JSONParseError) -> Bool {
        skipWhitespace()
        if next(is: UInt8(ascii: ",")) {
            position &+= 1
            return true
        }
        guard next(is: closing) else { throw unexpected() }
        position &+= 1
        return false
    }

    // MARK: Numbers

    /// Reads a run of decimal digits into `significand` while it stays below
    /// 2^53 (past that the value is no longer exact); returns how many there were.
    @inline(__always)
    private func scanDigits(_ index: inout Int, into significand: inout UInt64, exact: inout Bool) -> Int {
        var digits = 0
        while index < count {
            let digit = byte(at: index) &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            if significand <= 900_719_925_474_098 {
                significand = significand &* 10 &+ UInt64(digit)
            } else {
                exact = false
            }
            digits &+= 1
            index &+= 1
        }
        return digits
    }

    /// Validates the number at `position` and moves past it.
    ///
    /// Returns its value when `materialize` is true. Otherwise the value is only
    /// computed when the number might exceed the `Double` range, so that validation
    /// rejects exactly what parsing rejects; the result is then meaningless.
    @inline(__always)
    /// The text of the number just scanned from `start`, when writing its
    /// `Double` could give other text: it has a fraction or an exponent
    /// (`1.0`, `2.50`, `1e3`), or more than 15 digits (an integer past what a
    /// `Double` holds exactly). Nil for the common integer, written back as read.
    package func numberLiteral(from start: Int) -> String? {
        let length = position - start
        if length <= 15 {
            var index = start
            while index < position {
                let byte = byte(at: index)
                if byte == UInt8(ascii: ".") || byte | 0x20 == UInt8(ascii: "e") { break }
                index &+= 1
            }
            if index == position { return nil }
        }
        return String(unsafeUninitializedCapacity: length) { buffer in
            for offset in 0 ..< length { buffer[offset] = byte(at: start + offset) }
            return length
        }
    }

    package mutating func scanNumber(materialize: Bool) throws(JSONParseError) -> Double {
        let start = position
        var index = position
        let negative = byte(at: index) == UInt8(ascii: "-")
        if negative { index &+= 1 }

        // Clinger's fast path: up to 2^53 of significand and a power of ten up to
        // 10^22 are both exact, so one IEEE multiplication or division rounds correctly.
        var significand: UInt64 = 0
        var significandIsExact = true
        var integerDigits = 0
        guard index < count else { throw error("invalid number", at: index) }
        let first = byte(at: index)
        if first == UInt8(ascii: "0") {
            index &+= 1
            if index < count, byte(at: index) &- UInt8(ascii: "0") < 10 { throw error("invalid number", at: start) }
        } else if first &- UInt8(ascii: "0") < 10 {
            integerDigits = scanDigits(&index, into: &significand, exact: &significandIsExact)
        } else {
            throw error("invalid number", at: index)
        }

        var fractionDigits = 0
        if index < count, byte(at: index) == UInt8(ascii: ".") {
            index &+= 1
            fractionDigits = scanDigits(&index, into: &significand, exact: &significandIsExact)
            guard fractionDigits > 0 else { throw error("invalid number", at: index) }
        }

        var exponent = 0
        if index < count, byte(at: index) | 0x20 == UInt8(ascii: "e") {
            index &+= 1
            var exponentIsNegative = false
            if index < count, byte(at: index) == UInt8(ascii: "-") || byte(at: index) == UInt8(ascii: "+") {
                exponentIsNegative = byte(at: index) == UInt8(ascii: "-")
                index &+= 1
            }
            var exponentDigits = 0
            while index < count {
                let digit = byte(at: index) &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                // Saturate: anything this large is out of range (or zero) anyway.
                if exponent < 100_000_000 { exponent = exponent &* 10 &+ Int(digit) }
                exponentDigits &+= 1
                index &+= 1
            }
            guard exponentDigits > 0 else { throw error("invalid number", at: index) }
            if exponentIsNegative { exponent = -exponent }
        }
        position = index

        if !materialize {
            // Below 10^(integer digits + exponent) < 10^308: certainly in range.
            if integerDigits &+ exponent <= 308 { return 0 }
            return try convertNumber(from: start, to: index)
        }
        if significandIsExact {
            let power = exponent &- fractionDigits
            var value: Double?
            if significand == 0 {
                value = 0
            } else if power == 0 {
                value = Double(significand)
            } else if power > 0 && power <= 22 {
                value = Double(significand) * Self.exactPowerOfTen(power)
            } else if power < 0 && power >= -22 {
                value = Double(significand) / Self.exactPowerOfTen(-power)
            }
            if let value { return negative ? -value : value }
        }
        return try convertNumber(from: start, to: index)
    }

    /// Correctly rounded conversion of validated number text, for what the fast path cannot do.
    package func convertNumber(from start: Int, to end: Int) throws(JSONParseError) -> Double {
        let text = String(decoding: UnsafeRawBufferPointer(start: base + start, count: end &- start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw error("number out of range", at: start) }
        return value
    }

    /// 10^power for 0 ≤ power ≤ 22, all exactly representable.
    @inline(__always)
    package static func exactPowerOfTen(_ power: Int) -> Double {
        switch power {
        case 0: 1e0
        case 1: 1e1
        case 2: 1e2
        case 3: 1e3
        case 4: 1e4
        case 5: 1e5
        case 6: 1e6
        case 7: 1e7
        case 8: 1e8
        case 9: 1e9
        case 10: 1e10
        case 11: 1e11
        case 12: 1e12
        case 13: 1e13
        case 14: 1e14
        case 15: 1e15
        case 16: 1e16
        case 17: 1e17
        case 18: 1e18
        case 19: 1e19
        case 20: 1e20
        case 21: 1e21
        default: 1e22
        }
    }

    // MARK: Whole values without a tree

    /// Validates one value starting at `position` (after optional whitespace) and
    /// moves past it, with `depth` containers already open around it.
    ///
    /// Iterative, with a bit per open container, so arbitrarily deep input ends in
    /// the depth error rather than a stack overflow.
    package mutating func skipValue(depth: Int, maximumDepth: Int) throws(JSONParseError) {
        skipWhitespace()
        // A string, the most common value skipped (a member before the one looked
        // for): passed without setting up the containers' stack.
        if position < count && byte(at: position) == UInt8(ascii: "\"") {
            _ = try skipString()
            return
        }
        var open = ContainerStack()
        nextValue: while true {
            skipWhitespace()
            guard position < count else { throw unexpected() }
            let first = byte(at: position)
            switch first {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard depth &+ open.depth < maximumDepth else { throw depthError(maximumDepth) }
                let isObject = first == UInt8(ascii: "{")
                position &+= 1
                skipWhitespace()
                if next(is: isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    position &+= 1
                } else {
                    open.push(isObject: isObject)
                    if isObject { _ = try skipKey() }
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                _ = try skipString()
            case UInt8(ascii: "t"):
                try skipLiteral("true")
            case UInt8(ascii: "f"):
                try skipLiteral("false")
            case UInt8(ascii: "n"):
                try skipLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                _ = try scanNumber(materialize: false)
            default:
                throw unexpected()
            }
            // A value ended: continue or close the containers around it.
            while open.depth > 0 {
                skipWhitespace()
                guard position < count else { throw unexpected() }
                let value = byte(at: position)
                let isObject = open.topIsObject
                if value == UInt8(ascii: ",") {
                    position &+= 1
                    if isObject { _ = try skipKey() }
                    continue nextValue
                }
                guard value == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { throw unexpected() }
                position &+= 1
                open.pop()
            }
            return
        }
    }
}

/// A stack of open containers, one bit each (object or array). The first 64 levels
/// live in a single word, so shallow documents (and view keys) never allocate.
package struct ContainerStack {
    private var word: UInt64 = 0
    private var spilled: [UInt64] = []
    package private(set) var depth = 0

    @inline(__always)
    package mutating func push(isObject: Bool) {
        if depth & 63 == 0 && depth > 0 {
            spilled.append(word)
            word = 0
        }
        word = word << 1 | (isObject ? 1 : 0)
        depth &+= 1
    }

    @inline(__always)
    package mutating func pop() {
        word >>= 1
        depth &-= 1
        if depth & 63 == 0 && depth > 0 {
            word = spilled.removeLast()
        }
    }

    package var topIsObject: Bool { word & 1 == 1 }
}
