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
    package static func json(_ text: some Collection<UInt8>) -> [UInt8] {
        var parser = Parser(bytes: Array(text))
        var out: [UInt8] = []
        out.reserveCapacity(text.count + text.count / 4)
        parser.value(into: &out)
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

    static func appendAtom(_ name: String, to out: inout [UInt8]) {
        out += [atom, 0, UInt8(name.utf8.count)]
        out += name.utf8
    }

    static func appendBinary(_ bytes: [UInt8], to out: inout [UInt8]) {
        out.append(binary)
        appendUInt32(UInt32(bytes.count), to: &out)
        out += bytes
    }

    /// An integer given as decimal digits: the smallest of Erlang's encodings that holds it.
    static func appendInteger(digits: [UInt8], negative: Bool, to out: inout [UInt8]) {
        if digits.count <= 18, let magnitude = Int64(String(decoding: digits, as: UTF8.self)) {
            let value = negative ? -magnitude : magnitude
            if value >= 0 && value <= 255 {
                out += [smallInteger, UInt8(value)]
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

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(into out: inout [UInt8]) {
            skipSpace()
            guard index < bytes.count else { return }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members: [UInt8] = []
                var count: UInt32 = 0
                skipSpace()
                while index < bytes.count, bytes[index] != UInt8(ascii: "}") {
                    if bytes[index] == UInt8(ascii: ",") { index += 1; skipSpace(); continue }
                    members += [ErlangTerm.smallTuple, 2]
                    ErlangTerm.appendBinary(string(), to: &members)
                    skipSpace()
                    index += 1 // the colon
                    value(into: &members)
                    count += 1
                    skipSpace()
                }
                index += 1
                out += [ErlangTerm.smallTuple, 1]
                appendList(members, count: count, to: &out)
            case UInt8(ascii: "["):
                index += 1
                var elements: [UInt8] = []
                var count: UInt32 = 0
                skipSpace()
                while index < bytes.count, bytes[index] != UInt8(ascii: "]") {
                    if bytes[index] == UInt8(ascii: ",") { index += 1; skipSpace(); continue }
                    value(into: &elements)
                    count += 1
                    skipSpace()
                }
                index += 1
                appendList(elements, count: count, to: &out)
            case UInt8(ascii: "\""):
                ErlangTerm.appendBinary(string(), to: &out)
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

        func appendList(_ elements: [UInt8], count: UInt32, to out: inout [UInt8]) {
            if count == 0 {
                out.append(ErlangTerm.nil_)
                return
            }
            out.append(ErlangTerm.list)
            ErlangTerm.appendUInt32(count, to: &out)
            out += elements
            out.append(ErlangTerm.nil_)
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
                var digits = Array(negative ? text.dropFirst() : text[...])
                while digits.count > 1, digits.first == UInt8(ascii: "0") { digits.removeFirst() }
                ErlangTerm.appendInteger(digits: digits, negative: negative && digits != [UInt8(ascii: "0")], to: &out)
            } else {
                out.append(ErlangTerm.float)
                let value = Double(String(decoding: text, as: UTF8.self)) ?? 0
                withUnsafeBytes(of: value.bitPattern.bigEndian) { out.append(contentsOf: $0) }
            }
        }

        /// A string's UTF-8 bytes, escapes decoded; `index` is at its opening quote.
        mutating func string() -> [UInt8] {
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return out
                }
                if byte != UInt8(ascii: "\\") {
                    out.append(byte)
                    index += 1
                    continue
                }
                index += 1
                guard index < bytes.count else { break }
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
            return out
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
