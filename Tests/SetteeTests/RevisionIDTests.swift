import Foundation
import Testing
@testable import SetteeCore
@testable import SetteeStorage
@testable import Settee

/// Revision ids as CouchDB 3.5 makes them (`couch_db:new_revid/1`), checked
/// against ids worked out by hand from CouchDB's algorithm (MD5 of the
/// edit's `term_to_binary`), and the fast term writer checked against a
/// plain one, a tree built then encoded, on random documents.
@Suite("Revision ids")
struct RevisionIDTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    @Test("a deletion that keeps members hashes them, as CouchDB does, and its tombstone keeps them")
    func deletionWithMembers() throws {
        let db = try open()
        let first = try db.put(#"{"_id":"d","x":1}"#).revision
        #expect(first.description == "1-0785e9eb543380151003dc452c3a001a")
        let deletion = try db.put(#"{"_id":"d","_rev":"\#(first)","_deleted":true,"x":1}"#).revision
        #expect(deletion.description == "2-f371130c299556045d1800329bb54835")
        #expect(try db.document("d") == nil)
        #expect(try db.documentIncludingDeleted("d")?.json == #"{"_id":"d","_rev":"\#(deletion)","_deleted":true,"x":1}"#)

        _ = try db.put(#"{"_id":"e","x":1}"#)
        let nested = try db.put(#"{"_id":"e","_rev":"\#(first)","_deleted":true,"reason":"gone","at":[1,2.5]}"#).revision
        #expect(nested.description == "2-bb5d52f0a77917e6717861051cb1093d")

        // DELETE /db/doc: a tombstone of no members.
        _ = try db.put(#"{"_id":"f","x":1}"#)
        #expect(try db.delete("f", revision: first).revision.description == "2-d0ae140c7f7cdb92dd85a3e31ae18f0c")
    }

    @Test("an object with a key twice keeps the last member where it stands, as jiffy's dedupe_keys does, at any depth")
    func duplicateKeys() throws {
        let db = try open()
        let top = try db.put(#"{"_id":"dup","a":1,"b":2,"a":3}"#).revision
        #expect(top.description == "1-cf8195ee4268460f49235c8e98d42c6f")
        #expect(try db.document("dup")?.json == #"{"_id":"dup","_rev":"\#(top)","b":2,"a":3}"#)

        let nested = try db.put(#"{"_id":"n","o":{"k":1,"k":2},"z":[{"q":1,"q":"x","r":null}]}"#).revision
        #expect(nested.description == "1-6e88dbb170d456469c572928597f2680")
        #expect(try db.document("n")?.json == #"{"_id":"n","_rev":"\#(nested)","o":{"k":2},"z":[{"q":"x","r":null}]}"#)

        // Keys are the same when their decoded bytes are: this is {"a":2}.
        #expect(try db.put(#"{"_id":"e","a":1,"\u0061":2}"#).revision.description == "1-3975759ccff3842adf690a5c10caee42")

        // An object of more than 32 members, its duplicate last.
        let members = (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        let big = try db.put(#"{"_id":"big",\#(members),"k3":true}"#).revision
        #expect(big.description == "1-ab32069d8df3425bd31ea50900296738")
    }

    @Test("an array of integers 0-255 is an Erlang string (STRING_EXT) in the hashed term, as term_to_binary writes it")
    func smallIntegerArrays() throws {
        let db = try open()
        #expect(try db.put(#"{"_id":"s","a":[1,2,3]}"#).revision.description == "1-308048961a84beb0c9e99e07facf0f5f")
        // One element outside 0-255: a list.
        #expect(try db.put(#"{"_id":"l","a":[1,256,3]}"#).revision.description == "1-6ee55de4c0c786213c20992a07ea7ea6")
        // Nested, beside other values.
        #expect(try db.put(#"{"_id":"n","a":[[0,255],"s",[7]]}"#).revision.description == "1-ff4d9680f191645b62ea869c510178b4")
    }

    @Test("the term of random documents is the plain writer's, byte for byte, and so is the revision id")
    func randomDocuments() throws {
        var random = SplitMix64(seed: 0x5E77EE)
        for round in 0..<3000 {
            var generator = RandomJSON(random: random)
            let text = Array(generator.object(depth: 0).utf8)
            random = generator.random
            do {
                _ = try text.withUnsafeBytes { try JSONObjectScanner.scan($0) }
            } catch {
                Issue.record("round \(round): not valid JSON: \(String(decoding: text, as: UTF8.self))")
            }
            let expected = PlainTerm.term(of: text)
            let fast = text.withUnsafeBytes { ErlangExternalTerm.json($0) }
                ?? JSONDuplicateKeys.removed(from: text).withUnsafeBytes { ErlangExternalTerm.json($0) }
            #expect(fast == expected, "round \(round): \(String(decoding: text, as: UTF8.self))")
            let previous = round % 2 == 0 ? nil : Revision(generation: UInt32(round), hash: Array(MD5.hash(String(round))))
            let deleted = round % 3 == 0
            var whole: [UInt8] = [131, 108, 0, 0, 0, 5]
            whole += deleted ? [100, 0, 4] + Array("true".utf8) : [100, 0, 5] + Array("false".utf8)
            whole += PlainTerm.integer(String(previous?.generation ?? 0))
            whole += previous.map { [109, 0, 0, 0, 16] + $0.hash } ?? [97, 0]
            whole += expected + [106, 106]
            #expect(RevisionHash.of(deleted: deleted, previous: previous, body: text) == MD5.hash(whole),
                    "round \(round): \(String(decoding: text, as: UTF8.self))")
        }
    }

    @Test("numbers: integers at each encoding's bounds, bignums, and floats on and off the exact fast path")
    func numbers() throws {
        let integers = ["0", "-0", "1", "255", "256", "-1", "2147483647", "2147483648", "-2147483648", "-2147483649",
                        "4294967296", "999999999999999999", "-999999999999999999", "1000000000000000000",
                        "9223372036854775807", "-9223372036854775808", "18446744073709551616",
                        "123456789012345678901234567890", "-123456789012345678901234567890"]
        let floats = ["0.0", "-0.0", "1.5", "-1.5", "0.1", "1e5", "1E5", "1e+5", "1e-7", "1E-22", "1e22", "1e23", "-1e23",
                      "123456789.123456789", "9007199254740993.0", "9007199254740992.0", "2.2250738585072014e-308",
                      "4.9e-324", "1.7976931348623157e308", "0.30000000000000004", "3.141592653589793", "100.0",
                      "1234567890123456789.5", "0.000000000000000000000000001", "12345678901234567890e-10", "7e-1"]
        for number in integers + floats {
            let text = Array(#"{"n":\#(number)}"#.utf8)
            let fast = text.withUnsafeBytes { ErlangExternalTerm.json($0) }
            #expect(fast == PlainTerm.term(of: text), "\(number)")
        }
    }

    @Test("strings: escapes, surrogates (paired, lone, reversed), UTF-8, and quotes and backslashes at every offset of an 8-byte word")
    func strings() throws {
        var strings = [#""#, #"\n\t\r\b\f\/\\\""#, #"\u00e9\u20ac\ud83d\ude00"#, #"\ud800"#, #"\udc00"#, #"\ud800\u0041"#,
                       #"\ud800\ud800\udc00"#, #"\ude00\ud83d"#, "é€😀", #"\u0000"#]
        for offset in 0..<17 {
            let padding = String(repeating: "a", count: offset)
            strings += [padding + #"\""# + padding, padding + #"\\"# + "b", padding + "é" + padding + #"\n"#]
        }
        for string in strings {
            let text = Array(#"{"\#(string)":"\#(string)"}"#.utf8)
            let fast = text.withUnsafeBytes { ErlangExternalTerm.json($0) }
            #expect(fast == PlainTerm.term(of: text), "\(string)")
        }
    }
}

/// Random JSON objects: nesting, every kind of number and string, spaces
/// between tokens, and now and then a key twice (or spelled with an escape).
private struct RandomJSON {
    var random: SplitMix64

    mutating func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }

    mutating func space() -> String { below(8) == 0 ? [" ", "\n", "\t ", "\r\n  "][below(4)] : "" }

    mutating func object(depth: Int) -> String {
        let count = below(depth == 0 ? 14 : 6)
        var keys: [String] = []
        var members: [String] = []
        for _ in 0..<count {
            var key = key()
            if !keys.isEmpty, below(6) == 0 { key = keys[below(keys.count)] }
            if key == "a", below(2) == 0 { key = #"\u0061"# }
            keys.append(key)
            members.append(space() + "\"\(key)\"" + space() + ":" + space() + value(depth: depth + 1) + space())
        }
        return "{" + space() + members.joined(separator: ",") + "}"
    }

    mutating func key() -> String {
        ["a", "b", "type", "name", "_x", "", "é", "k\(below(50))", #"q\"uote"#, "long key of some length"][below(10)]
    }

    mutating func value(depth: Int) -> String {
        switch below(depth > 3 ? 6 : 9) {
        case 0: return ["true", "false", "null"][below(3)]
        case 1, 2: return integer()
        case 3: return float()
        case 4, 5: return "\"" + string() + "\""
        case 6: return object(depth: depth)
        default:
            let count = below(6)
            if below(3) == 0 {
                // Integers 0-255 only (an Erlang string), now and then one just outside or written -0.
                return "[" + (0...count).map { _ in below(20) == 0 ? ["256", "-1", "-0", "1.0"][below(4)] : String(below(256)) }.joined(separator: ",") + "]"
            }
            return "[" + space() + (0..<count).map { _ in value(depth: depth + 1) }.joined(separator: "," + space()) + space() + "]"
        }
    }

    mutating func integer() -> String {
        switch below(6) {
        case 0: return String(below(256))
        case 1: return String(Int64(bitPattern: random.next()) >> Int64(below(63)))
        case 2: return ["255", "256", "-1", "2147483647", "2147483648", "-2147483648", "-2147483649", "0", "-0"][below(9)]
        case 3: return (below(2) == 0 ? "-" : "") + "1" + String(repeating: "0", count: 15 + below(30))
        case 4: return String(random.next())
        default: return String(below(100_000))
        }
    }

    mutating func float() -> String {
        let sign = below(3) == 0 ? "-" : ""
        switch below(5) {
        case 0: return sign + String(below(1000)) + "." + String(below(1000))
        case 1: return sign + String(below(100)) + ["e", "E"][below(2)] + ["", "+", "-"][below(3)] + String(below(40))
        case 2: return sign + "\(Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF))"
        case 3: return sign + String(random.next()) + "." + String(random.next()) + "e-" + String(below(30))
        default: return sign + "0.0" + String(below(10_000_000)) + "1"
        }
    }

    mutating func string() -> String {
        let pieces = [#"\""#, #"\\"#, #"\/"#, #"\n"#, #"\t"#, #"\u00e9"#, #"\ud83d\ude00"#, #"\ud800"#, "é", "€", "😀",
                      "plain text", "x", " ", "0123456789abcdef"]
        return (0..<below(8)).map { _ in pieces[below(pieces.count)] }.joined()
    }
}

/// The term of a JSON object written the plain way: the text parsed into a
/// tree, duplicate keys removed as `jiffy`'s `dedupe_keys` removes them,
/// then the tree encoded, each list's and binary's length known before it.
private enum PlainTerm {
    indirect enum Node {
        case integer(String)
        case float(Double)
        case atom(String)
        case binary([UInt8])
        case list([Node])
        case object([(key: [UInt8], value: Node)])
    }

    static func term(of text: [UInt8]) -> [UInt8] {
        var index = 0
        return encode(parse(text, &index))
    }

    static func skipSpace(_ text: [UInt8], _ index: inout Int) {
        while index < text.count, [0x20, 0x09, 0x0A, 0x0D].contains(text[index]) { index += 1 }
    }

    static func parse(_ text: [UInt8], _ index: inout Int) -> Node {
        skipSpace(text, &index)
        switch text[index] {
        case UInt8(ascii: "{"):
            index += 1
            var members: [(key: [UInt8], value: Node)] = []
            while true {
                skipSpace(text, &index)
                if text[index] == UInt8(ascii: "}") { index += 1; break }
                if text[index] == UInt8(ascii: ",") { index += 1; continue }
                let key = string(text, &index)
                skipSpace(text, &index)
                index += 1
                members.append((key, parse(text, &index)))
            }
            var seen = Set<[UInt8]>()
            var kept: [(key: [UInt8], value: Node)] = []
            for member in members.reversed() where seen.insert(member.key).inserted { kept.insert(member, at: 0) }
            return .object(kept)
        case UInt8(ascii: "["):
            index += 1
            var elements: [Node] = []
            while true {
                skipSpace(text, &index)
                if text[index] == UInt8(ascii: "]") { index += 1; break }
                if text[index] == UInt8(ascii: ",") { index += 1; continue }
                elements.append(parse(text, &index))
            }
            return .list(elements)
        case UInt8(ascii: "\""): return .binary(string(text, &index))
        case UInt8(ascii: "t"): index += 4; return .atom("true")
        case UInt8(ascii: "f"): index += 5; return .atom("false")
        case UInt8(ascii: "n"): index += 4; return .atom("null")
        default:
            let start = index
            while index < text.count, "-+.eE0123456789".utf8.contains(text[index]) { index += 1 }
            let number = String(decoding: text[start..<index], as: UTF8.self)
            if number.contains(where: { ".eE".contains($0) }) { return .float(Double(number)!) }
            return .integer(number)
        }
    }

    static func string(_ text: [UInt8], _ index: inout Int) -> [UInt8] {
        index += 1
        // Each raw byte, or each escape's scalar and whether it was a \u escape.
        enum Piece { case byte(UInt8), scalar(UInt32, unicode: Bool) }
        var pieces: [Piece] = []
        while text[index] != UInt8(ascii: "\"") {
            if text[index] != UInt8(ascii: "\\") {
                pieces.append(.byte(text[index]))
                index += 1
                continue
            }
            let escape = text[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "n"): pieces.append(.scalar(0x0A, unicode: false))
            case UInt8(ascii: "t"): pieces.append(.scalar(0x09, unicode: false))
            case UInt8(ascii: "r"): pieces.append(.scalar(0x0D, unicode: false))
            case UInt8(ascii: "b"): pieces.append(.scalar(0x08, unicode: false))
            case UInt8(ascii: "f"): pieces.append(.scalar(0x0C, unicode: false))
            case UInt8(ascii: "u"):
                pieces.append(.scalar(UInt32(String(decoding: text[index..<index + 4], as: UTF8.self), radix: 16)!, unicode: true))
                index += 4
            default: pieces.append(.scalar(UInt32(escape), unicode: false))
            }
        }
        index += 1
        // A high surrogate takes the \u escape after it: with a low one, the
        // scalar they make; with anything else U+FFFD, then that escape's
        // scalar. Any surrogate left is U+FFFD.
        func utf8(_ scalar: UInt32) -> [UInt8] { Array(String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8) }
        var bytes: [UInt8] = []
        var position = 0
        while position < pieces.count {
            let piece = pieces[position]
            position += 1
            switch piece {
            case .byte(let byte): bytes.append(byte)
            case .scalar(var scalar, _):
                if (0xD800..<0xDC00).contains(scalar), position < pieces.count, case .scalar(let low, unicode: true) = pieces[position] {
                    position += 1
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        bytes += utf8(0xFFFD)
                        scalar = low
                    }
                }
                bytes += utf8(scalar)
            }
        }
        return bytes
    }

    static func integer(_ text: String) -> [UInt8] {
        let negative = text.hasPrefix("-")
        var digits = Array((negative ? text.dropFirst() : text[...]).utf8).map { Int($0) - 48 }
        while digits.count > 1, digits[0] == 0 { digits.removeFirst() }
        // Base 256, least significant first, by long division.
        var bytes: [UInt8] = []
        while digits.contains(where: { $0 != 0 }) {
            var remainder = 0
            var quotient: [Int] = []
            for digit in digits {
                let current = remainder * 10 + digit
                quotient.append(current / 256)
                remainder = current % 256
            }
            bytes.append(UInt8(remainder))
            digits = quotient
        }
        let isNegative = negative && !bytes.isEmpty
        var magnitude: UInt64 = 0
        if bytes.count <= 8 { for byte in bytes.reversed() { magnitude = magnitude << 8 | UInt64(byte) } }
        if bytes.count <= 8, !isNegative, magnitude <= 255 { return [97, UInt8(magnitude)] }
        if bytes.count <= 8, isNegative ? magnitude <= 1 << 31 : magnitude < 1 << 31 {
            let value = isNegative ? -Int64(magnitude) : Int64(magnitude)
            return [98] + withUnsafeBytes(of: Int32(value).bigEndian) { Array($0) }
        }
        if bytes.count <= 255 { return [110, UInt8(bytes.count), isNegative ? 1 : 0] + bytes }
        return [111] + withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { Array($0) } + [isNegative ? 1 : 0] + bytes
    }

    static func encode(_ node: Node) -> [UInt8] {
        func length(_ count: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(count).bigEndian) { Array($0) } }
        func list(_ elements: [[UInt8]]) -> [UInt8] {
            elements.isEmpty ? [106] : [108] + length(elements.count) + elements.flatMap { $0 } + [106]
        }
        /// term_to_binary writes a list of integers 0-255 (fewer than 65,536) as a string.
        func string(_ elements: [[UInt8]]) -> [UInt8]? {
            guard !elements.isEmpty, elements.count < 65536, elements.allSatisfy({ $0.count == 2 && $0[0] == 97 }) else { return nil }
            return [107, UInt8(elements.count >> 8), UInt8(elements.count & 0xFF)] + elements.map { $0[1] }
        }
        switch node {
        case .integer(let text): return integer(text)
        case .float(let value): return [70] + withUnsafeBytes(of: value.bitPattern.bigEndian) { Array($0) }
        case .atom(let name): return [100, 0, UInt8(name.utf8.count)] + Array(name.utf8)
        case .binary(let bytes): return [109] + length(bytes.count) + bytes
        case .list(let elements):
            let encoded = elements.map(encode)
            return string(encoded) ?? list(encoded)
        case .object(let members):
            return [104, 1] + list(members.map { [104, 2, 109] + length($0.key.count) + $0.key + encode($0.value) })
        }
    }
}
