import Foundation

/// JSON in Erlang's external term format (`term_to_binary/2`), the bytes
/// CouchDB's revision ids hash (`RevisionHash`, SetteeStorage): a value as `jiffy`
/// decodes it — an object `{[{Key, Value}, …]}`, a string a binary, an
/// integer an integer (a bignum past 64 bits), any other number a float,
/// `true`, `false` and `null` atoms — with its duplicate keys removed as
/// CouchDB's `dedupe_keys` removes them (`JSONDuplicateKeys` (SetteeStorage)).
///
/// Not to be confused with `ErlangTerm` in SetteeViews, a term held in
/// memory to be printed in the built-in reducers' messages.
package enum ErlangExternalTerm {
    package static let version: UInt8 = 131
    package static let smallInteger: UInt8 = 97, integer: UInt8 = 98, float: UInt8 = 70, atom: UInt8 = 100
    package static let smallTuple: UInt8 = 104, nil_: UInt8 = 106, string: UInt8 = 107, list: UInt8 = 108, binary: UInt8 = 109
    package static let smallBig: UInt8 = 110, largeBig: UInt8 = 111

    /// The term of a JSON value's text (valid JSON: Settee checked it), or
    /// nil when an object in it has a key twice: CouchDB hashes such a body
    /// only once its duplicates are gone (`JSONDuplicateKeys.removed(from:)` (SetteeStorage)).
    package static func json(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        var buffer = TermBuffer(capacity: text.count + text.count / 2 + 16)
        guard write(json: text, into: &buffer) else { return nil }
        return buffer.array
    }

    /// Writes the term of a JSON value's text (without the version byte);
    /// false when an object in it has a key twice (what was written is then
    /// not the term CouchDB hashes).
    package static func write(json text: UnsafeRawBufferPointer, into buffer: inout TermBuffer) -> Bool {
        guard let start = text.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            buffer.append(nil_)
            return true
        }
        var writer = JSONTermWriter(at: start, end: start + text.count)
        writer.value(into: &buffer)
        return !writer.foundDuplicateKey
    }

    /// The term of a document's attachments as `new_revid` lists them:
    /// `{Name, Type, Md5}` for each, in the reverse of their order.
    package static func attachments(_ stubs: [(name: String, contentType: String, digest: [UInt8])]) -> [UInt8] {
        guard !stubs.isEmpty else { return [nil_] }
        var buffer = TermBuffer(capacity: 64 * stubs.count)
        buffer.reserve(5)
        buffer.append(list)
        buffer.appendUInt32(UInt32(stubs.count))
        for stub in stubs.reversed() {
            buffer.reserve(2)
            buffer.append(smallTuple)
            buffer.append(3)
            buffer.appendBinary(Array(stub.name.utf8))
            buffer.appendBinary(Array(stub.contentType.utf8))
            buffer.appendBinary(stub.digest)
        }
        buffer.reserve(1)
        buffer.append(nil_)
        return buffer.array
    }

    /// An integer given as decimal digits (no sign, no leading zeros): the
    /// smallest of Erlang's encodings that holds it.
    package static func appendInteger(digits: UnsafeBufferPointer<UInt8>, negative: Bool, to buffer: inout TermBuffer) {
        if digits.count <= 18 {
            var magnitude: UInt64 = 0
            for digit in digits { magnitude = magnitude &* 10 &+ UInt64(digit &- 0x30) }
            buffer.appendInteger(magnitude: magnitude, negative: negative)
            return
        }
        // A bignum: its magnitude in base 256, least significant byte first.
        var decimal = digits.map { $0 &- 0x30 }
        var bytes: [UInt8] = []
        while !(decimal.isEmpty || decimal.allSatisfy { $0 == 0 }) {
            var remainder = 0
            var quotient: [UInt8] = []
            quotient.reserveCapacity(decimal.count)
            for digit in decimal {
                let current = remainder * 10 + Int(digit)
                let q = current / 256
                remainder = current % 256
                if !quotient.isEmpty || q != 0 { quotient.append(UInt8(q)) }
            }
            bytes.append(UInt8(remainder))
            decimal = quotient
        }
        buffer.appendBig(bytes, negative: negative)
    }
}

/// A growing byte buffer for terms, written through a raw pointer: each
/// write is a store after one capacity check (``reserve(_:)``) for a run of
/// writes, not an array append with its uniqueness and capacity checks.
package struct TermBuffer: ~Copyable {
    package private(set) var base: UnsafeMutablePointer<UInt8>
    package private(set) var count = 0
    private var capacity: Int

    package init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The bytes written.
    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// A copy of the bytes written.
    package var array: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    package mutating func reserve(_ extra: Int) {
        if count &+ extra > capacity { grow(extra) }
    }

    private mutating func grow(_ extra: Int) {
        let newCapacity = max(capacity * 2, count + extra)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Appends a byte; room for it was reserved.
    @inline(__always)
    package mutating func append(_ byte: UInt8) {
        base[count] = byte
        count &+= 1
    }

    /// Appends a 32-bit big-endian number; room for it was reserved.
    @inline(__always)
    package mutating func appendUInt32(_ value: UInt32) {
        UnsafeMutableRawPointer(base + count).storeBytes(of: value.bigEndian, as: UInt32.self)
        count &+= 4
    }

    /// Sets the 32-bit big-endian number at `offset`.
    @inline(__always)
    package func setUInt32(_ value: UInt32, at offset: Int) {
        UnsafeMutableRawPointer(base + offset).storeBytes(of: value.bigEndian, as: UInt32.self)
    }

    /// Appends `byteCount` bytes from `source`.
    @inline(__always)
    package mutating func append(_ source: UnsafePointer<UInt8>, count byteCount: Int) {
        reserve(byteCount)
        (base + count).update(from: source, count: byteCount)
        count &+= byteCount
    }

    /// Drops the bytes from `offset` on.
    package mutating func truncate(to offset: Int) { count = offset }

    /// Whether the bytes from `offset` to the end are small integers
    /// (SMALL_INTEGER_EXT, two bytes each) and nothing else.
    package func holdsSmallIntegers(from offset: Int) -> Bool {
        var index = offset
        while index < count {
            if base[index] != ErlangExternalTerm.smallInteger { return false }
            index += 2
        }
        return true
    }

    /// Counts `byteCount` more bytes as written: they were stored at ``base`` + ``count``.
    @inline(__always)
    package mutating func advance(by byteCount: Int) { count &+= byteCount }

    /// A binary: `109`, its length, its bytes.
    package mutating func appendBinary(_ bytes: [UInt8]) {
        reserve(5 + bytes.count)
        append(ErlangExternalTerm.binary)
        appendUInt32(UInt32(bytes.count))
        bytes.withUnsafeBufferPointer { if let start = $0.baseAddress { append(start, count: $0.count) } }
    }

    /// An atom of a static name (`true`, `false`, `null`).
    package mutating func appendAtom(_ name: StaticString) {
        reserve(3 + name.utf8CodeUnitCount)
        append(ErlangExternalTerm.atom)
        append(0)
        append(UInt8(name.utf8CodeUnitCount))
        append(name.utf8Start, count: name.utf8CodeUnitCount)
    }

    /// An integer of `magnitude` and sign: a small integer (0...255), an
    /// integer (32 bits, signed) or a small bignum.
    package mutating func appendInteger(magnitude: UInt64, negative: Bool) {
        reserve(11)
        if !negative && magnitude <= 255 {
            append(ErlangExternalTerm.smallInteger)
            append(UInt8(magnitude))
        } else if negative ? magnitude <= 1 << 31 : magnitude < 1 << 31 {
            append(ErlangExternalTerm.integer)
            appendUInt32(UInt32(truncatingIfNeeded: negative ? 0 &- magnitude : magnitude))
        } else {
            let byteCount = (64 - magnitude.leadingZeroBitCount + 7) / 8
            append(ErlangExternalTerm.smallBig)
            append(UInt8(byteCount))
            append(negative ? 1 : 0)
            var rest = magnitude
            for _ in 0..<byteCount {
                append(UInt8(truncatingIfNeeded: rest))
                rest >>= 8
            }
        }
    }

    /// A bignum of `bytes` (least significant first).
    package mutating func appendBig(_ bytes: [UInt8], negative: Bool) {
        reserve(6 + bytes.count)
        if bytes.count <= 255 {
            append(ErlangExternalTerm.smallBig)
            append(UInt8(bytes.count))
        } else {
            append(ErlangExternalTerm.largeBig)
            appendUInt32(UInt32(bytes.count))
        }
        append(negative ? 1 : 0)
        for byte in bytes { append(byte) }
    }
}

/// Writes the term of the JSON value at `position` straight into a
/// ``TermBuffer``: a list's or a binary's length is written as a
/// placeholder and set once its end is reached, so nothing is built twice.
/// Keys are compared as they are written, to find a duplicate.
package struct JSONTermWriter {
    var position: UnsafePointer<UInt8>
    let end: UnsafePointer<UInt8>
    private(set) var foundDuplicateKey = false
    /// The keys of the objects being written: where each key's bytes are in
    /// the buffer (high 32 bits) and how many there are (low 32 bits).
    private var keys: [UInt64] = []

    package init(at start: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>) {
        position = start
        self.end = end
        keys.reserveCapacity(64)
    }

    @inline(__always)
    mutating func skipSpace() {
        while position < end {
            switch position.pointee {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func value(into out: inout TermBuffer) {
        skipSpace()
        guard position < end else { return }
        switch position.pointee {
        case UInt8(ascii: "{"): list(closing: UInt8(ascii: "}"), ofMembers: true, into: &out)
        case UInt8(ascii: "["): list(closing: UInt8(ascii: "]"), ofMembers: false, into: &out)
        case UInt8(ascii: "\""): _ = string(into: &out)
        case UInt8(ascii: "t"):
            position += 4
            out.appendAtom("true")
        case UInt8(ascii: "f"):
            position += 5
            out.appendAtom("false")
        case UInt8(ascii: "n"):
            position += 4
            out.appendAtom("null")
        default:
            number(into: &out)
        }
    }

    /// An array's elements as a list, or an object's members as a list of
    /// `{Key, Value}` in a 1-tuple; `position` is at the opening bracket.
    /// An empty list is `[]` (NIL).
    mutating func list(closing: UInt8, ofMembers: Bool, into out: inout TermBuffer) {
        position += 1
        out.reserve(7)
        if ofMembers {
            out.append(ErlangExternalTerm.smallTuple)
            out.append(1)
        }
        let head = out.count
        out.append(ErlangExternalTerm.list)
        out.appendUInt32(0)
        let firstKey = keys.count
        var count: UInt32 = 0
        var seen: Set<Int>?
        while true {
            skipSpace()
            guard position < end else { break }
            let byte = position.pointee
            if byte == closing {
                position += 1
                break
            }
            if byte == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if ofMembers {
                out.reserve(2)
                out.append(ErlangExternalTerm.smallTuple)
                out.append(2)
                let key = string(into: &out)
                noteKey(at: key.offset, count: key.count, in: out, firstKey: firstKey, seen: &seen)
                skipSpace()
                position += 1  // the colon
            }
            value(into: &out)
            count += 1
        }
        if ofMembers { keys.removeLast(keys.count - firstKey) }
        if count == 0 {
            out.truncate(to: head)
            out.reserve(1)
            out.append(ErlangExternalTerm.nil_)
        } else if !ofMembers, count < 65536, out.count - (head + 5) == 2 * Int(count), out.holdsSmallIntegers(from: head + 5) {
            // term_to_binary writes a list of integers 0-255 as a string: STRING_EXT, a 16-bit length, the bytes.
            out.base[head] = ErlangExternalTerm.string
            out.base[head + 1] = UInt8(count >> 8)
            out.base[head + 2] = UInt8(count & 0xFF)
            for index in 0..<Int(count) { out.base[head + 3 + index] = out.base[head + 6 + 2 * index] }
            out.truncate(to: head + 3 + Int(count))
        } else {
            out.setUInt32(count, at: head + 1)
            out.reserve(1)
            out.append(ErlangExternalTerm.nil_)
        }
    }

    /// Keeps a key of the object whose keys begin at `firstKey`, noting
    /// whether the object had it already: compared with each earlier key
    /// while the object has few, then only with those whose hash in `seen`
    /// is the same.
    @inline(__always)
    private mutating func noteKey(at offset: Int, count: Int, in out: borrowing TermBuffer, firstKey: Int, seen: inout Set<Int>?) {
        if !foundDuplicateKey {
            if keys.count - firstKey >= 32 {
                if seen == nil {
                    var hashes = Set<Int>(minimumCapacity: 64)
                    for key in keys[firstKey...] {
                        hashes.insert(Self.hash(out.base + Int(key >> 32), count: Int(key & 0xFFFF_FFFF)))
                    }
                    seen = hashes
                }
                if !seen!.insert(Self.hash(out.base + offset, count: count)).inserted {
                    foundDuplicateKey = hasKey(at: offset, count: count, in: out, firstKey: firstKey)
                }
            } else {
                foundDuplicateKey = hasKey(at: offset, count: count, in: out, firstKey: firstKey)
            }
        }
        keys.append(UInt64(offset) << 32 | UInt64(count))
    }

    /// Whether a key of the object whose keys begin at `firstKey` has the bytes at `offset`.
    @inline(__always)
    private func hasKey(at offset: Int, count: Int, in out: borrowing TermBuffer, firstKey: Int) -> Bool {
        let bytes = out.base + offset
        for index in firstKey..<keys.count {
            let key = keys[index]
            guard Int(key & 0xFFFF_FFFF) == count else { continue }
            let other = out.base + Int(key >> 32)
            if count == 0 || (other[0] == bytes[0] && memcmp(other, bytes, count) == 0) { return true }
        }
        return false
    }

    private static func hash(_ bytes: UnsafePointer<UInt8>, count: Int) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(start: bytes, count: count))
        return hasher.finalize()
    }

    /// An integer (no `.`, `e` or `E`) or a float, as `jiffy` tells them apart.
    mutating func number(into out: inout TermBuffer) {
        let start = position
        var negative = false
        if position < end, position.pointee == UInt8(ascii: "-") {
            negative = true
            position += 1
        }
        let digitsStart = position
        var mantissa: UInt64 = 0
        var significantDigits = 0
        while position < end, position.pointee &- 0x30 < 10 {
            let digit = UInt64(position.pointee &- 0x30)
            if significantDigits < 19 { mantissa = mantissa &* 10 &+ digit }
            if mantissa != 0 { significantDigits += 1 }
            position += 1
        }
        let integerDigits = position - digitsStart
        let isFloat = position < end && (position.pointee == UInt8(ascii: ".") || position.pointee | 0x20 == UInt8(ascii: "e"))
        if !isFloat {
            if integerDigits <= 18 {
                out.appendInteger(magnitude: mantissa, negative: negative && mantissa != 0)
            } else {
                var digits = UnsafeBufferPointer(start: digitsStart, count: integerDigits)
                while digits.count > 1, digits[0] == UInt8(ascii: "0") { digits = UnsafeBufferPointer(rebasing: digits.dropFirst()) }
                let isZero = digits.count == 1 && digits[0] == UInt8(ascii: "0")
                ErlangExternalTerm.appendInteger(digits: digits, negative: negative && !isZero, to: &out)
            }
            return
        }
        // A float: exactly as strtod reads it. When the digits and the
        // power of ten are both exact doubles, one multiplication or
        // division rounds correctly too (Clinger's fast path).
        var exponent = 0
        if position < end, position.pointee == UInt8(ascii: ".") {
            position += 1
            while position < end, position.pointee &- 0x30 < 10 {
                let digit = UInt64(position.pointee &- 0x30)
                if significantDigits < 19 {
                    mantissa = mantissa &* 10 &+ digit
                    exponent -= 1
                }
                if mantissa != 0 { significantDigits += 1 }
                position += 1
            }
        }
        if position < end, position.pointee | 0x20 == UInt8(ascii: "e") {
            position += 1
            var exponentNegative = false
            if position < end, position.pointee == UInt8(ascii: "-") || position.pointee == UInt8(ascii: "+") {
                exponentNegative = position.pointee == UInt8(ascii: "-")
                position += 1
            }
            var written = 0
            while position < end, position.pointee &- 0x30 < 10 {
                if written < 100_000 { written = written * 10 + Int(position.pointee &- 0x30) }
                position += 1
            }
            exponent += exponentNegative ? -written : written
        }
        let value: Double
        if significantDigits <= 19, mantissa <= 1 << 53, exponent >= -22, exponent <= 22 {
            let magnitude = exponent < 0 ? Double(mantissa) / Self.powersOfTen[-exponent] : Double(mantissa) * Self.powersOfTen[exponent]
            value = negative ? -magnitude : magnitude
        } else {
            // strtod on a NUL-terminated copy: no String made for the number.
            let length = position - start
            value = withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { copy in
                UnsafeMutableRawPointer(copy.baseAddress!).copyMemory(from: start, byteCount: length)
                copy[length] = 0
                return strtod(copy.baseAddress!, nil)
            }
        }
        out.reserve(9)
        out.append(ErlangExternalTerm.float)
        UnsafeMutableRawPointer(out.base + out.count).storeBytes(of: value.bitPattern.bigEndian, as: UInt64.self)
        out.advance(by: 8)
    }

    /// 10^0 through 10^22, each exactly a double.
    private static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// A string as a binary of its UTF-8 bytes, escapes decoded; `position`
    /// is at its opening quote. Returns where its bytes are in the buffer.
    ///
    /// A string's bytes are never more than its text's (an escape decodes
    /// to fewer bytes than it takes), so room for the rest of the input is
    /// made once, and the bytes are written through a local pointer: eight
    /// at a time while eight remain, each eight stored whole, the output
    /// moving on only past those before a quote or backslash.
    package mutating func string(into out: inout TermBuffer) -> (offset: Int, count: Int) {
        position += 1
        out.reserve(5 + (end - position) + 8)
        out.append(ErlangExternalTerm.binary)
        let lengthAt = out.count
        out.appendUInt32(0)
        let first = out.count
        var source = position
        var target = out.base + first
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = ones &* 0x22, backslashes = ones &* 0x5C
        scan: while true {
            while end - source >= 8 {
                let word = UInt64(littleEndian: UnsafeRawPointer(source).loadUnaligned(as: UInt64.self))
                UnsafeMutableRawPointer(target).storeBytes(of: word.littleEndian, as: UInt64.self)
                let q = word ^ quotes, b = word ^ backslashes
                // A byte of q or b is zero where the word has a quote or a
                // backslash; the lowest flagged byte is exact.
                let found = ((q &- ones) & ~q | (b &- ones) & ~b) & highs
                if found != 0 {
                    let before = found.trailingZeroBitCount &>> 3
                    source += before
                    target += before
                    break
                }
                source += 8
                target += 8
            }
            while source < end, source.pointee != UInt8(ascii: "\""), source.pointee != UInt8(ascii: "\\") {
                target.pointee = source.pointee
                source += 1
                target += 1
            }
            guard source < end else { break scan }
            if source.pointee == UInt8(ascii: "\"") {
                source += 1
                break scan
            }
            source += 1
            guard source < end else { break scan }
            let escape = source.pointee
            source += 1
            switch escape {
            case UInt8(ascii: "n"): target.pointee = 0x0A
            case UInt8(ascii: "t"): target.pointee = 0x09
            case UInt8(ascii: "r"): target.pointee = 0x0D
            case UInt8(ascii: "b"): target.pointee = 0x08
            case UInt8(ascii: "f"): target.pointee = 0x0C
            case UInt8(ascii: "u"):
                var scalar = Self.hex4(&source, end: end)
                if scalar >= 0xD800 && scalar < 0xDC00, end - source >= 2,
                   source[0] == UInt8(ascii: "\\"), source[1] == UInt8(ascii: "u") {
                    source += 2
                    let low = Self.hex4(&source, end: end)
                    if low >= 0xDC00 && low < 0xE000 {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        Self.writeUTF8(0xFFFD, at: &target)
                        scalar = low
                    }
                }
                Self.writeUTF8(scalar, at: &target)
                continue scan
            default: target.pointee = escape
            }
            target += 1
        }
        position = source
        let count = target - (out.base + first)
        out.advance(by: count)
        out.setUInt32(UInt32(count), at: lengthAt)
        return (first, count)
    }

    /// Writes the UTF-8 of `scalar` at `target` and moves past it; a
    /// surrogate, which no scalar is, as U+FFFD.
    @inline(__always)
    static func writeUTF8(_ scalar: UInt32, at target: inout UnsafeMutablePointer<UInt8>) {
        let scalar = scalar >= 0xD800 && scalar < 0xE000 ? 0xFFFD : scalar
        switch scalar {
        case 0..<0x80:
            target[0] = UInt8(scalar)
            target += 1
        case 0x80..<0x800:
            target[0] = UInt8(0xC0 | scalar >> 6)
            target[1] = UInt8(0x80 | scalar & 0x3F)
            target += 2
        case 0x800..<0x10000:
            target[0] = UInt8(0xE0 | scalar >> 12)
            target[1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            target[2] = UInt8(0x80 | scalar & 0x3F)
            target += 3
        default:
            target[0] = UInt8(0xF0 | scalar >> 18)
            target[1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            target[2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            target[3] = UInt8(0x80 | scalar & 0x3F)
            target += 4
        }
    }

    /// The value of the four hexadecimal digits at `source` (fewer at the
    /// end of the input), moving past them.
    static func hex4(_ source: inout UnsafePointer<UInt8>, end: UnsafePointer<UInt8>) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard source < end else { break }
            let byte = source.pointee
            let digit: UInt32 = switch byte {
            case 0x30...0x39: UInt32(byte - 0x30)
            case 0x61...0x66: UInt32(byte - 0x61 + 10)
            case 0x41...0x46: UInt32(byte - 0x41 + 10)
            default: 0
            }
            value = value << 4 | digit
            source += 1
        }
        return value
    }
}
