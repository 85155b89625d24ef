import Foundation
import Testing
@testable import SetteeCore

/// ``JSONMemberLocator/locate(_:in:assumingValid:)`` on valid JSON passes
/// the members before a field without validating them: it finds exactly
/// what the validating lookup finds, whatever the values it passes hold
/// (escaped quotes and backslashes, brackets inside strings, nesting,
/// numbers, literals, whitespace).
@Suite("Locating members in valid JSON text without validating it")
struct JSONMemberLocatorValidTextTests {
    /// Both lookups of `path` in `text`; the validating one must succeed.
    func lookups(_ path: [String], in text: String) throws -> (validating: JSONMemberLocator.Lookup, assumingValid: JSONMemberLocator.Lookup) {
        let parts = path.map { Array($0.utf8) }
        return try Array(text.utf8).withUnsafeBytes { bytes in
            (try JSONMemberLocator.locate(parts, in: bytes), try JSONMemberLocator.locate(parts, in: bytes, assumingValid: true))
        }
    }

    static let documents = [
        #"{"_id":"a","_rev":"1-x","type":"order","customer":"cust-1","items":[{"sku":"S"}]}"#,
        #"{"a":"quote \" inside","b":"backslash at end \\","c":"both \\\" and \\\\","customer":"c"}"#,
        #"{"a":"brackets ] } [ { in a string","b":[1,[2,[3,{"x":"]"}]]],"customer":{"name":"n","tags":["t"]}}"#,
        #"{ "a" : -12.5e+3 , "b" : true , "c" : false , "d" : null , "customer" : 7 }"#,
        "{\n\t\"a\": [ 1 , 2 ],\r\n  \"b\": {}, \"c\": [], \"customer\": [\"x\", {\"y\": \"\\u0041\"}]\n}",
        #"{"é":"ünïcødé ✓","a":"\u00e9\ud83d\ude00","customer":"ä","after":1}"#,
        #"{"a":1,"b":2}"#,
        #"{}"#,
        #"{"customer":"first","customer":"second"}"#,
        #"{"list":[{"a":1},{"customer":"in an array"}],"n":0}"#,
        #"{"cust\"omer":1,"a\\b":2,"\u0063ustomer":3,"customer":4," spaced ":5}"#,
        "{ \"a\" \n : 1 ,\t\"customer\"\r\n:\n\"ws\" }",
    ]

    static let paths = [["customer"], ["customer", "name"], ["customer", "1", "y"], ["customer", "0"], ["list", "1", "customer"],
                        ["list", "5"], ["b", "1", "1", "1", "x"], ["a"], ["after"], ["missing"], ["n"], ["d"],
                        ["cust\"omer"], ["a\\b"], [" spaced "]]

    @Test("finds what the validating lookup finds", arguments: documents)
    func sameLookups(document: String) throws {
        for path in Self.paths {
            let (validating, assumingValid) = try lookups(path, in: document)
            #expect(validating == assumingValid, "\(path) in \(document)")
        }
    }

    @Test("a found value's range covers the whole value")
    func foundRanges() throws {
        let text = #"{"skip":{"a":["x\"]",{"b":"}"}]},"value":{"k":["v\\",1]},"next":2}"#
        let (_, lookup) = try lookups(["value"], in: text)
        guard case .found(let range) = lookup else {
            Issue.record("not found: \(lookup)")
            return
        }
        let bytes = Array(text.utf8)
        #expect(String(decoding: bytes[range], as: UTF8.self) == #"{"k":["v\\",1]}"#)
    }

    @Test("strings that end where the buffer ends do not read past it")
    func unterminated() {
        var lexer = JSONLexer(UnsafeRawBufferPointer(start: nil, count: 0))
        lexer.skipValidValue()
        #expect(lexer.position == 0)
        let text = Array(#""abc\""#.utf8)
        text.withUnsafeBytes { bytes in
            var lexer = JSONLexer(bytes)
            lexer.skipValidValue()
            #expect(lexer.position == bytes.count)
        }
    }
}
