/// Compact JSON serialisation, byte for byte what JavaScript's `JSON.stringify`
/// writes for the same value.
///
/// Map functions run in JavaScript and their output is compared with ours (view
/// keys, hashes of emitted rows), so the text must agree exactly: no whitespace,
/// the same escapes and the same number formatting.
package enum JSONWriter {
    /// Appends the compact JSON text of `value` to `bytes`: numbers as
    /// JavaScript writes them, or, with `literals`, as they were read where
    /// they kept their text (a document's `1.0`, `9007199254740993`).
    package static func write(_ value: JSONValue, into bytes: inout [UInt8], literals: Bool = false) {
        switch value {
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .bool(let flag):
            bytes.append(contentsOf: flag ? "true".utf8 : "false".utf8)
        case .number(let number, let literal):
            if literals, let literal { bytes.append(contentsOf: literal.utf8) } else { writeNumber(number, into: &bytes) }
        case .string(let text):
            writeString(text, into: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element, into: &bytes, literals: literals)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(member.key, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                write(member.value, into: &bytes, literals: literals)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// The compact JSON text of `value`.
    package static func string(_ value: JSONValue, literals: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        write(value, into: &bytes, literals: literals)
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Strings

    /// Appends `text` quoted and escaped as `JSON.stringify` does: `\"`, `\\`, `\b`,
    /// `\f`, `\n`, `\r`, `\t`, other control characters as lowercase `\u00xx`,
    /// everything else (including `/` and DEL) as literal UTF-8.
    package static func writeString(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { writeString(utf8: $0, into: &bytes) }
    }

    /// ``writeString(_:into:)`` for text already in UTF-8.
    package static func writeString(utf8: UnsafeBufferPointer<UInt8>, into bytes: inout [UInt8]) {
        do {
            // Room for the unescaped string, grown as appends grow (an exact
            // reservation would copy the whole buffer on every call once full).
            let needed = bytes.count + utf8.count + 2
            if needed > bytes.capacity { bytes.reserveCapacity(max(needed, bytes.capacity * 2)) }
            bytes.append(UInt8(ascii: "\""))
            let base = UnsafeRawPointer(utf8.baseAddress)
            var runStart = 0
            var index = 0
            while index < utf8.count {
                // Find the next byte to escape, eight bytes at a time where possible.
                if index + 8 <= utf8.count, let base {
                    let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                    let escapes = escapedBytes(word)
                    if escapes == 0 {
                        index += 8
                        continue
                    }
                    index += escapes.trailingZeroBitCount >> 3
                }
                let value = utf8[index]
                guard value < 0x20 || value == UInt8(ascii: "\"") || value == UInt8(ascii: "\\") else {
                    index += 1
                    continue
                }
                // Copy the plain run before the escape in one go.
                if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                appendEscape(for: value, into: &bytes)
                index += 1
                runStart = index
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// The length of what ``writeString(utf8:into:)`` writes for `utf8`.
    package static func stringLength(utf8: UnsafeBufferPointer<UInt8>) -> Int {
        var length = utf8.count + 2
        for value in utf8 where value < 0x20 || value == UInt8(ascii: "\"") || value == UInt8(ascii: "\\") {
            switch value {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x0C, 0x0A, 0x0D, 0x09: length += 1
            default: length += 5
            }
        }
        return length
    }

    /// The high bit of each byte of `word` (little-endian) that is a quote, a
    /// backslash or a control character; exact for the lowest such byte. Unlike
    /// the parser's test, non-ASCII bytes pass: they are written as they are.
    @inline(__always)
    private static func escapedBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let control = (word &- ones &* 0x20) & ~word
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let quoteFound = (quote &- ones) & ~quote
        let backslashFound = (backslash &- ones) & ~backslash
        return (control | quoteFound | backslashFound) & (ones &* 0x80)
    }

    private static func appendEscape(for value: UInt8, into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\\"))
        switch value {
        case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            bytes.append(contentsOf: "u00".utf8)
            bytes.append(hexDigit(value >> 4))
            bytes.append(hexDigit(value & 0x0F))
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    // MARK: Numbers

    /// Appends `number` as ECMAScript's `Number::toString` writes it: shortest
    /// round-trip digits, plain notation for decimal exponents from −6 to 21 and
    /// `1.5e+21` style otherwise; `-0` as `0`; NaN and infinities as `null` (as
    /// `JSON.stringify` does).
    package static func writeNumber(_ number: Double, into bytes: inout [UInt8]) {
        guard number.isFinite else {
            bytes.append(contentsOf: "null".utf8)
            return
        }
        if number == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        // Below 2^53 an integer's shortest digits are the integer itself.
        // (Int64 conversion truncates, which tests integrality without libm.)
        if number.magnitude < 9_007_199_254_740_992, Double(Int64(number)) == number {
            writeInteger(Int64(number), into: &bytes)
            return
        }
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        // Swift's description has the shortest round-trip digits (as ECMAScript
        // requires) but its own layout, e.g. "1.2345e-07"; take the digits and exponent.
        var text = number.magnitude.description
        text.withUTF8 { utf8 in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digits in
                var digitCount = 0
                var integerDigitCount: Int?
                var exponent = 0
                var index = 0
                while index < utf8.count {
                    let value = utf8[index]
                    index += 1
                    if value == UInt8(ascii: ".") {
                        integerDigitCount = digitCount
                    } else if value == UInt8(ascii: "e") {
                        var exponentIsNegative = false
                        while index < utf8.count {
                            let exponentByte = utf8[index]
                            index += 1
                            if exponentByte == UInt8(ascii: "-") {
                                exponentIsNegative = true
                            } else if exponentByte != UInt8(ascii: "+") {
                                exponent = exponent * 10 + Int(exponentByte - UInt8(ascii: "0"))
                            }
                        }
                        if exponentIsNegative { exponent = -exponent }
                    } else if digitCount < digits.count {
                        digits[digitCount] = value
                        digitCount += 1
                    }
                }
                // value = digits × 10^(exponent of the last digit); drop zeros at both ends.
                var lastDigitExponent = (integerDigitCount ?? digitCount) - digitCount + exponent
                var first = 0
                while first < digitCount - 1, digits[first] == UInt8(ascii: "0") { first += 1 }
                while digitCount - 1 > first, digits[digitCount - 1] == UInt8(ascii: "0") {
                    digitCount -= 1
                    lastDigitExponent += 1
                }
                let significant = UnsafeBufferPointer(rebasing: digits[first..<digitCount])
                let k = significant.count
                let n = k + lastDigitExponent  // the decimal point sits after the n-th digit
                layOut(significant, k: k, n: n, into: &bytes)
            }
        }
    }

    /// ECMAScript `Number::toString` steps 6–10 for digits `s` (k of them) and
    /// decimal point position `n`: value = 0.s × 10^n.
    private static func layOut(_ s: UnsafeBufferPointer<UInt8>, k: Int, n: Int, into bytes: inout [UInt8]) {
        if k <= n && n <= 21 {
            bytes.append(contentsOf: s)
            bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: n - k))
        } else if 0 < n && n <= 21 {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: s[..<n]))
            bytes.append(UInt8(ascii: "."))
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: s[n...]))
        } else if -6 < n && n <= 0 {
            bytes.append(contentsOf: "0.".utf8)
            bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: -n))
            bytes.append(contentsOf: s)
        } else {
            bytes.append(s[0])
            if k > 1 {
                bytes.append(UInt8(ascii: "."))
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: s[1...]))
            }
            bytes.append(UInt8(ascii: "e"))
            bytes.append(n - 1 >= 0 ? UInt8(ascii: "+") : UInt8(ascii: "-"))
            writeInteger(Int64((n - 1).magnitude), into: &bytes)
        }
    }

    private static func writeInteger(_ value: Int64, into bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var remaining = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            } while remaining > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start...]))
        }
    }
}
