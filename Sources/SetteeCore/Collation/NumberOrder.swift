/// CouchDB's order of numbers: Erlang's, in which an integer is exact at any
/// size and a float is a `Double`, and the two compare by their values
/// (`1 == 1.0`, `9007199254740993 > 9007199254740992.0`).
///
/// A ``JSONValue/number(_:literal:)`` is its `Double` unless its literal is an
/// integer (no `.`, `e` or `E`): then it is that integer. Two numbers whose
/// doubles differ are ordered as their doubles (rounding keeps order); only
/// numbers whose doubles are equal and at least 2^53 in magnitude (where
/// doubles are integers and integers may round) are compared digit by digit.
package enum NumberOrder {
    /// -1, 0 or 1 as `x` (read from `xLiteral` when it is an integer literal)
    /// is below, equal to or above `y`. A NaN (never from JSON) is above every number.
    package static func compare(_ x: Double, _ xLiteral: String?, _ y: Double, _ yLiteral: String?) -> Int {
        if x < y { return -1 }
        if x > y { return 1 }
        if x != y {
            if x.isNaN && y.isNaN { return 0 }
            return x.isNaN ? 1 : -1
        }
        // Only finite doubles (JSON has no other; a Swift-made infinity has no digits to compare).
        guard x.magnitude >= 9_007_199_254_740_992, x.isFinite, xLiteral != nil || yLiteral != nil else { return 0 }
        let left = Magnitude(integerLiteral: xLiteral) ?? Magnitude(integral: x.magnitude)
        let right = Magnitude(integerLiteral: yLiteral) ?? Magnitude(integral: y.magnitude)
        let order = left.compare(right)
        return x < 0 ? -order : order
    }

    /// A non-negative integer in base-10⁹ digits, least significant first, without leading zeros.
    private struct Magnitude {
        static let base: UInt64 = 1_000_000_000
        var digits: [UInt32]

        /// The magnitude of an integer literal (`-?[0-9]+`); nil for any other text.
        init?(integerLiteral text: String?) {
            guard var bytes = text.map({ Array($0.utf8) }) else { return nil }
            if bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
            guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
            digits = []
            var end = bytes.count
            while end > 0 {
                let start = max(0, end - 9)
                var digit: UInt32 = 0
                for byte in bytes[start..<end] { digit = digit &* 10 &+ UInt32(byte &- UInt8(ascii: "0")) }
                digits.append(digit)
                end = start
            }
            trim()
        }

        /// The exact value of a non-negative integral double.
        init(integral value: Double) {
            digits = []
            var significand = (UInt64(1) << 52) | value.significandBitPattern
            var shift = Int(value.exponent) - 52
            if shift < 0 {
                significand >>= UInt64(-shift)
                shift = 0
            }
            while significand > 0 {
                digits.append(UInt32(significand % Self.base))
                significand /= Self.base
            }
            for _ in 0..<shift { double() }
        }

        private mutating func double() {
            var carry: UInt64 = 0
            for index in digits.indices {
                let doubled = UInt64(digits[index]) * 2 + carry
                digits[index] = UInt32(doubled % Self.base)
                carry = doubled / Self.base
            }
            if carry > 0 { digits.append(UInt32(carry)) }
        }

        private mutating func trim() {
            while digits.last == 0 { digits.removeLast() }
        }

        func compare(_ other: Magnitude) -> Int {
            if digits.count != other.digits.count { return digits.count < other.digits.count ? -1 : 1 }
            for index in digits.indices.reversed() where digits[index] != other.digits[index] {
                return digits[index] < other.digits[index] ? -1 : 1
            }
            return 0
        }
    }
}
