import Foundation
import SetteeCore

/// CouchDB's bookmark (`mango_json_bookmark`): `[{startkey_docid, DocId},
/// {startkey, Key}]` in Erlang's external term format
/// (`term_to_binary(_, [compressed, {minor_version, 1}])`), the last result's
/// index key and document id, read back with the same shape. Settee writes
/// the bytes CouchDB writes whenever compressing them would not make them
/// smaller (Erlang then keeps them as they are: every bookmark of an index
/// key shorter than a few hundred bytes), so a bookmark resumes on either
/// server. A compressed one (tag 80) from CouchDB is read too.
///
/// Values are as `jiffy` decodes JSON: strings are binaries, `true`, `false`
/// and `null` atoms, objects `{[{Key, Value}, …]}`, integral numbers
/// integers and others floats (`NEW_FLOAT_EXT`). A list of integers 0–255 is
/// `STRING_EXT`, as Erlang writes it.
enum BookmarkTerm {
    private static let version: UInt8 = 131, compressed: UInt8 = 80
    private static let smallInteger: UInt8 = 97, integer: UInt8 = 98, oldFloat: UInt8 = 99, newFloat: UInt8 = 70
    private static let atom: UInt8 = 100, smallAtom: UInt8 = 115, atomUTF8: UInt8 = 118, smallAtomUTF8: UInt8 = 119
    private static let smallTuple: UInt8 = 104, largeTuple: UInt8 = 105, nil_: UInt8 = 106, string: UInt8 = 107
    private static let list: UInt8 = 108, binary: UInt8 = 109, smallBig: UInt8 = 110, largeBig: UInt8 = 111

    /// The bytes of `[{startkey_docid, id}, {startkey, key}]`.
    static func encode(key: JSONValue, id: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + id.utf8.count)
        out.append(version)
        out.append(list)
        appendUInt32(2, to: &out)
        appendPair(to: &out)
        appendAtom("startkey_docid", to: &out)
        appendBinary(id.utf8, to: &out)
        appendPair(to: &out)
        appendAtom("startkey", to: &out)
        append(key, to: &out)
        out.append(nil_)
        return out
    }

    /// The key and id of a bookmark's bytes; nil when they are not a term of
    /// that shape (a list holding `{startkey, Key}` and `{startkey_docid, Id}`).
    static func decode(_ bytes: [UInt8]) -> (key: JSONValue, id: String)? {
        guard bytes.first == version else { return nil }
        var body = Array(bytes.dropFirst())
        if body.first == compressed {
            guard body.count >= 5 else { return nil }
            let size = Int(body[1]) << 24 | Int(body[2]) << 16 | Int(body[3]) << 8 | Int(body[4])
            guard size <= 1 << 24, let inflated = Inflate.zlib(Array(body[5...]), expectedSize: size), inflated.count == size else { return nil }
            body = inflated
        }
        var reader = Reader(bytes: body)
        guard let term = try? reader.term(), reader.position == body.count, case .list(let members) = term else { return nil }
        var key: JSONValue?
        var id: String?
        for member in members {
            guard case .tuple(let pair) = member, pair.count == 2, case .atom(let name) = pair[0] else { return nil }
            if name == "startkey", key == nil { key = pair[1].json }
            if name == "startkey_docid", id == nil, case .binary(let text) = pair[1] { id = String(decoding: text, as: UTF8.self) }
        }
        guard let key, let id else { return nil }
        return (key, id)
    }

    // MARK: Writing

    // Appended byte by byte: an array literal per part allocated an array each time.

    private static func appendAtom(_ name: StaticString, to out: inout [UInt8]) {
        out.append(atom)
        out.append(0)
        out.append(UInt8(name.utf8CodeUnitCount))
        out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    /// The start of a two-element tuple.
    private static func appendPair(to out: inout [UInt8]) {
        out.append(smallTuple)
        out.append(2)
    }

    private static func appendUInt32(_ value: Int, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value >> 24))
        out.append(UInt8(truncatingIfNeeded: value >> 16))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    private static func appendBinary(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        out.append(binary)
        appendUInt32(bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    /// The integer a number is written as, when it is one jiffy would read as an integer.
    private static func integral(_ number: Double) -> Int64? {
        guard number.rounded(.towardZero) == number, abs(number) < 9.2e18 else { return nil }
        return Int64(number)
    }

    private static func append(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: appendAtom("null", to: &out)
        case .bool(let flag): appendAtom(flag ? "true" : "false", to: &out)
        case .string(let text): appendBinary(text.utf8, to: &out)
        case .number(let number, _):
            if let value = integral(number) {
                if value >= 0 && value <= 255 {
                    out.append(smallInteger)
                    out.append(UInt8(value))
                } else if value >= Int64(Int32.min) && value <= Int64(Int32.max) {
                    out.append(integer)
                    appendUInt32(Int(value), to: &out)
                } else {
                    var magnitude = value.magnitude
                    var digits: [UInt8] = []
                    while magnitude > 0 {
                        digits.append(UInt8(truncatingIfNeeded: magnitude))
                        magnitude >>= 8
                    }
                    out += [smallBig, UInt8(digits.count), value < 0 ? 1 : 0]
                    out += digits
                }
            } else {
                out.append(newFloat)
                withUnsafeBytes(of: number.bitPattern.bigEndian) { out.append(contentsOf: $0) }
            }
        case .array(let elements):
            if elements.isEmpty {
                out.append(nil_)
                return
            }
            // A list of bytes is a string to Erlang.
            let bytes = elements.compactMap { element -> UInt8? in
                guard case .number(let number, _) = element, let value = integral(number), value >= 0, value <= 255 else { return nil }
                return UInt8(value)
            }
            if bytes.count == elements.count, bytes.count <= 65535 {
                out += [string, UInt8(bytes.count >> 8), UInt8(bytes.count & 255)]
                out += bytes
                return
            }
            out.append(list)
            appendUInt32(elements.count, to: &out)
            for element in elements { append(element, to: &out) }
            out.append(nil_)
        case .object(let members):
            out += [smallTuple, 1]
            if members.isEmpty {
                out.append(nil_)
                return
            }
            out.append(list)
            appendUInt32(members.count, to: &out)
            for (key, member) in members {
                appendPair(to: &out)
                appendBinary(key.utf8, to: &out)
                append(member, to: &out)
            }
            out.append(nil_)
        }
    }

    // MARK: Reading

    /// The terms a bookmark holds.
    private indirect enum Term {
        case integer(Double)
        case float(Double)
        case atom(String)
        case binary([UInt8])
        case list([Term])
        case tuple([Term])

        /// The JSON value as jiffy encodes the term; a term jiffy cannot encode is null.
        var json: JSONValue {
            switch self {
            case .integer(let value), .float(let value): return .number(value)
            case .atom(let name):
                switch name {
                case "true": return true
                case "false": return false
                default: return .null
                }
            case .binary(let bytes): return .string(String(decoding: bytes, as: UTF8.self))
            case .list(let elements): return .array(elements.map(\.json))
            case .tuple(let elements):
                guard elements.count == 1, case .list(let members) = elements[0] else { return .null }
                var object: [(key: String, value: JSONValue)] = []
                for member in members {
                    guard case .tuple(let pair) = member, pair.count == 2 else { return .null }
                    let name: String
                    switch pair[0] {
                    case .binary(let bytes): name = String(decoding: bytes, as: UTF8.self)
                    case .atom(let atom): name = atom
                    default: return .null
                    }
                    object.append((name, pair[1].json))
                }
                return .object(object)
            }
        }
    }

    private struct Malformed: Error {}

    private struct Reader {
        let bytes: [UInt8]
        var position = 0
        var depth = 0

        mutating func byte() throws -> UInt8 {
            guard position < bytes.count else { throw Malformed() }
            position += 1
            return bytes[position - 1]
        }

        mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count >= 0, count <= bytes.count - position else { throw Malformed() }
            position += count
            return bytes[(position - count)..<position]
        }

        mutating func uint16() throws -> Int { Int(try byte()) << 8 | Int(try byte()) }
        mutating func uint32() throws -> Int { try uint16() << 16 | uint16() }

        mutating func term() throws -> Term {
            depth += 1
            defer { depth -= 1 }
            guard depth < 512 else { throw Malformed() }
            switch try byte() {
            case BookmarkTerm.smallInteger:
                return .integer(Double(try byte()))
            case BookmarkTerm.integer:
                return .integer(Double(Int32(truncatingIfNeeded: try uint32())))
            case BookmarkTerm.smallBig, BookmarkTerm.largeBig:
                let count = bytes[position - 1] == BookmarkTerm.smallBig ? Int(try byte()) : try uint32()
                let negative = try byte() != 0
                var magnitude = 0.0
                for digit in try take(count).reversed() { magnitude = magnitude * 256 + Double(digit) }
                return .integer(negative ? -magnitude : magnitude)
            case BookmarkTerm.newFloat:
                let raw = try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                return .float(Double(bitPattern: raw))
            case BookmarkTerm.oldFloat:
                let text = String(decoding: try take(31).prefix { $0 != 0 }, as: UTF8.self)
                guard let value = Double(text.trimmingCharacters(in: .whitespaces)) else { throw Malformed() }
                return .float(value)
            case BookmarkTerm.atom, BookmarkTerm.atomUTF8:
                return .atom(String(decoding: try take(try uint16()), as: UTF8.self))
            case BookmarkTerm.smallAtom, BookmarkTerm.smallAtomUTF8:
                return .atom(String(decoding: try take(Int(try byte())), as: UTF8.self))
            case BookmarkTerm.binary:
                return .binary(Array(try take(try uint32())))
            case BookmarkTerm.string:
                return .list(try take(try uint16()).map { .integer(Double($0)) })
            case BookmarkTerm.nil_:
                return .list([])
            case BookmarkTerm.list:
                let count = try uint32()
                guard count <= bytes.count - position else { throw Malformed() }
                var elements: [Term] = []
                for _ in 0..<count { elements.append(try term()) }
                // A proper list ends in NIL.
                guard try byte() == BookmarkTerm.nil_ else { throw Malformed() }
                return .list(elements)
            case BookmarkTerm.smallTuple, BookmarkTerm.largeTuple:
                let count = bytes[position - 1] == BookmarkTerm.smallTuple ? Int(try byte()) : try uint32()
                guard count <= bytes.count - position else { throw Malformed() }
                var elements: [Term] = []
                for _ in 0..<count { elements.append(try term()) }
                return .tuple(elements)
            default:
                throw Malformed()
            }
        }
    }
}
