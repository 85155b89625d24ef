import Foundation
import SetteeCore

/// A JSON document in Erlang's external term format, as CouchDB hashes it
/// for a revision id: CouchDB's `new_revid` is the MD5 of
/// `term_to_binary([Deleted, OldStart, OldRev, Body, Atts], [{minor_version, 1}])`,
/// where `Body` is the document as `jiffy` decodes it (objects `{[{K, V}, …]}`,
/// strings binaries, integers integers, other numbers floats, `true`,
/// `false` and `null` atoms). Settee computes the same bytes, so the same
/// edit gets the same revision id in Settee and in CouchDB.
package enum ErlangTerm {
    static let smallInteger: UInt8 = 97, integer: UInt8 = 98, float: UInt8 = 70, atom: UInt8 = 100
    static let smallTuple: UInt8 = 104, nil_: UInt8 = 106, list: UInt8 = 108, binary: UInt8 = 109, smallBig: UInt8 = 110

    /// The term of a JSON object's text (valid JSON: Settee checked it).
    package static func json(_ text: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count + text.count / 2 + 16)
        text.withUnsafeBufferPointer { bytes in
            var parser = Parser(bytes: bytes)
            parser.value(into: &out)
        }
        return out
    }

    /// CouchDB's revision after `previous` for a body whose term is
    /// `bodyTerm` and attachments whose term is `attachmentsTerm` (an empty
    /// list when nil).
    package static func revisionHash(deleted: Bool, previous: Revision?, bodyTerm: [UInt8], attachmentsTerm: [UInt8]?) -> [UInt8] {
        var md5 = MD5()
        var head: [UInt8] = [131, list, 0, 0, 0, 5]
        appendAtom(deleted ? "true" : "false", to: &head)
        appendInteger(digits: Array(String(previous?.generation ?? 0).utf8), negative: false, to: &head)
        if let previous {
            appendBinary(previous.hash, to: &head)
        } else {
            head += [smallInteger, 0]
        }
        md5.update(head)
        md5.update(bodyTerm)
        md5.update(attachmentsTerm ?? [nil_])
        md5.update([nil_])
        return md5.finalize()
    }

    /// The term of a document's attachments as `new_revid` lists them:
    /// `{Name, Type, Md5}` for each, in the reverse of their order.
    package static func attachments(_ stubs: [(name: String, contentType: String, digest: [UInt8])]) -> [UInt8] {
        guard !stubs.isEmpty else { return [nil_] }
        var out: [UInt8] = [list]
        appendUInt32(UInt32(stubs.count), to: &out)
        for stub in stubs.reversed() {
            out += [smallTuple, 3]
            appendBinary(Array(stub.name.utf8), to: &out)
            appendBinary(Array(stub.contentType.utf8), to: &out)
            appendBinary(stub.digest, to: &out)
        }
        out.append(nil_)
        return out
    }

    static func appendUInt32(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    static func appendAtom(_ name: StaticString, to out: inout [UInt8]) {
        out.append(atom)
        out.append(0)
        out.append(UInt8(name.utf8CodeUnitCount))
        out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    static func appendBinary(_ bytes: [UInt8], to out: inout [UInt8]) {
        out.append(binary)
        appendUInt32(UInt32(bytes.count), to: &out)
        out += bytes
    }

    /// An integer given as decimal digits: the smallest of Erlang's encodings that holds it.
    static func appendInteger(digits: some Collection<UInt8>, negative: Bool, to out: inout [UInt8]) {
        if digits.count <= 18 {
            var magnitude: Int64 = 0
            for digit in digits { magnitude = magnitude * 10 + Int64(digit &- 0x30) }
            let value = negative ? -magnitude : magnitude
            if value >= 0 && value <= 255 {
                out.append(smallInteger)
                out.append(UInt8(value))
                return
            }
            if value >= Int64(Int32.min) && value <= Int64(Int32.max) {
                out.append(integer)
                withUnsafeBytes(of: Int32(value).bigEndian) { out.append(contentsOf: $0) }
                return
            }
        }
        // A bignum: its magnitude in base 256, least significant byte first.
        var decimal = digits.map { $0 - UInt8(ascii: "0") }
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
        if bytes.count <= 255 {
            out += [smallBig, UInt8(bytes.count), negative ? 1 : 0]
        } else {
            out.append(111)
            appendUInt32(UInt32(bytes.count), to: &out)
            out.append(negative ? 1 : 0)
        }
        out += bytes
    }

    /// Writes the term of the JSON value at `index` straight into the output:
    /// a list's or a binary's length is written as a placeholder and set
    /// once its end is reached, so nothing is built twice.
    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func value(into out: inout [UInt8]) {
            skipSpace()
            guard index < bytes.count else { return }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                out.append(ErlangTerm.smallTuple)
                out.append(1)
                let list = beginList(&out)
                var count: UInt32 = 0
                skipSpace()
                while index < bytes.count, bytes[index] != UInt8(ascii: "}") {
                    if bytes[index] == UInt8(ascii: ",") { index += 1; skipSpace(); continue }
                    out.append(ErlangTerm.smallTuple)
                    out.append(2)
                    string(into: &out)
                    skipSpace()
                    index += 1 // the colon
                    value(into: &out)
                    count += 1
                    skipSpace()
                }
                index += 1
                endList(&out, at: list, count: count)
            case UInt8(ascii: "["):
                index += 1
                let list = beginList(&out)
                var count: UInt32 = 0
                skipSpace()
                while index < bytes.count, bytes[index] != UInt8(ascii: "]") {
                    if bytes[index] == UInt8(ascii: ",") { index += 1; skipSpace(); continue }
                    value(into: &out)
                    count += 1
                    skipSpace()
                }
                index += 1
                endList(&out, at: list, count: count)
            case UInt8(ascii: "\""):
                string(into: &out)
            case UInt8(ascii: "t"):
                index += 4
                ErlangTerm.appendAtom("true", to: &out)
            case UInt8(ascii: "f"):
                index += 5
                ErlangTerm.appendAtom("false", to: &out)
            case UInt8(ascii: "n"):
                index += 4
                ErlangTerm.appendAtom("null", to: &out)
            default:
                number(into: &out)
            }
        }

        /// Writes a list's head with a placeholder count; returns where it starts.
        func beginList(_ out: inout [UInt8]) -> Int {
            let start = out.count
            out.append(ErlangTerm.list)
            for _ in 0..<4 { out.append(0) }
            return start
        }

        /// Sets the count of the list begun at `start`, and ends it; an empty list is `[]` (NIL).
        func endList(_ out: inout [UInt8], at start: Int, count: UInt32) {
            if count == 0 {
                out.removeLast(out.count - start)
                out.append(ErlangTerm.nil_)
                return
            }
            setUInt32(count, at: start + 1, in: &out)
            out.append(ErlangTerm.nil_)
        }

        func setUInt32(_ value: UInt32, at position: Int, in out: inout [UInt8]) {
            out[position] = UInt8(truncatingIfNeeded: value >> 24)
            out[position + 1] = UInt8(truncatingIfNeeded: value >> 16)
            out[position + 2] = UInt8(truncatingIfNeeded: value >> 8)
            out[position + 3] = UInt8(truncatingIfNeeded: value)
        }

        mutating func number(into out: inout [UInt8]) {
            let start = index
            var isInteger = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    isInteger = false
                } else if !(byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || (byte >= 0x30 && byte <= 0x39)) {
                    break
                }
                index += 1
            }
            let text = bytes[start..<index]
            if isInteger {
                let negative = text.first == UInt8(ascii: "-")
                var digits = negative ? text.dropFirst() : text[...]
                while digits.count > 1, digits.first == UInt8(ascii: "0") { digits.removeFirst() }
                let isZero = digits.count == 1 && digits.first == UInt8(ascii: "0")
                ErlangTerm.appendInteger(digits: digits, negative: negative && !isZero, to: &out)
            } else {
                out.append(ErlangTerm.float)
                // strtod on a NUL-terminated copy: no String made for each number.
                let value = withUnsafeTemporaryAllocation(of: CChar.self, capacity: text.count + 1) { copy in
                    for (offset, byte) in text.enumerated() { copy[offset] = CChar(bitPattern: byte) }
                    copy[text.count] = 0
                    return strtod(copy.baseAddress!, nil)
                }
                withUnsafeBytes(of: value.bitPattern.bigEndian) { out.append(contentsOf: $0) }
            }
        }

        /// A string as a binary of its UTF-8 bytes, escapes decoded; `index` is at its opening quote.
        mutating func string(into out: inout [UInt8]) {
            index += 1
            out.append(ErlangTerm.binary)
            let lengthAt = out.count
            for _ in 0..<4 { out.append(0) }
            let first = out.count
            defer { setUInt32(UInt32(out.count - first), at: lengthAt, in: &out) }
            while index < bytes.count {
                // The run of bytes up to the next quote or escape, in one copy.
                let runStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") { index += 1 }
                if index > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
                guard index < bytes.count else { return }
                if bytes[index] == UInt8(ascii: "\"") {
                    index += 1
                    return
                }
                index += 1
                guard index < bytes.count else { return }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    var scalar = hex4()
                    if (0xD800..<0xDC00).contains(scalar), index + 1 < bytes.count,
                       bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                        index += 2
                        let low = hex4()
                        if (0xDC00..<0xE000).contains(low) {
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            out += String(Character(Unicode.Scalar(0xFFFD)!)).utf8
                            scalar = low
                        }
                    }
                    let character = Unicode.Scalar(scalar) ?? Unicode.Scalar(0xFFFD)!
                    out += String(Character(character)).utf8
                default: out.append(escape)
                }
            }
        }

        mutating func hex4() -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard index < bytes.count else { break }
                let byte = bytes[index]
                let digit: UInt32 = switch byte {
                case 0x30...0x39: UInt32(byte - 0x30)
                case 0x61...0x66: UInt32(byte - 0x61 + 10)
                case 0x41...0x46: UInt32(byte - 0x41 + 10)
                default: 0
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }
    }
}
