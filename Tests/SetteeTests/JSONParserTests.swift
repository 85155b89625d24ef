import Testing
import SetteeCore
@testable import Settee

/// Parses `bytes`, returning the error instead of throwing it.
private func parseError(_ bytes: [UInt8], maximumDepth: Int = JSONParser.defaultMaximumDepth) -> JSONParseError? {
    do throws(JSONParseError) {
        _ = try JSONParser.parse(bytes, maximumDepth: maximumDepth)
        return nil
    } catch {
        return error
    }
}

private func parseError(_ text: String) -> JSONParseError? {
    parseError(Array(text.utf8))
}

/// A string literal's bytes with `inner` between the quotes.
private func quoted(_ inner: [UInt8]) -> [UInt8] {
    [UInt8(ascii: "\"")] + inner + [UInt8(ascii: "\"")]
}

@Suite("JSONParser")
struct JSONParserTests {
    // MARK: - Valid documents

    static let validDocuments: [(text: String, value: JSONValue)] = [
        ("null", nil),
        ("true", true),
        ("false", false),
        ("0", 0),
        ("42", 42),
        ("-1.5e3", -1500),
        ("\"\"", ""),
        ("\"abc\"", "abc"),
        ("[]", []),
        ("{}", [:]),
        ("[ ]", []),
        ("{ }", [:]),
        (" \t\r\n[ 1 , \"a\" , null ]\n", [1, "a", nil]),
        ("{\"a\":1,\"b\":[true,false],\"c\":{\"d\":null}}", ["a": 1, "b": [true, false], "c": ["d": nil]]),
        ("[[[]],[{}]]", [[[]], [[:]]]),
        ("{\"z\":1,\"a\":2,\"m\":3}", ["z": 1, "a": 2, "m": 3]),
        ("{\"k\":1,\"k\":2}", .object([(key: "k", value: 1), (key: "k", value: 2)])),
        ("{\"\":\"\"}", ["": ""]),
        ("[1,[2,[3,{\"x\":[4]}]],5]", [1, [2, [3, ["x": [4]]]], 5]),
    ]

    @Test("accepts valid documents", arguments: validDocuments.indices)
    func validDocument(index: Int) throws {
        let (text, expected) = Self.validDocuments[index]
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test("members keep document order, duplicates included")
    func memberOrder() throws {
        let value = try JSONParser.parse(#"{"b":1,"a":2,"b":3}"#)
        #expect(value.objectValue?.map(\.key) == ["b", "a", "b"])
        #expect(value["b"] == 1)  // the first one
    }

    @Test("accepts bytes from any collection or buffer")
    func inputForms() throws {
        let bytes = Array(#"xx[1,"a"]yy"#.utf8)
        let expected: JSONValue = [1, "a"]
        #expect(try JSONParser.parse(bytes[2..<9]) == expected)
        #expect(try JSONParser.parse(Array(bytes[2..<9])) == expected)
        try bytes.withUnsafeBytes { buffer throws in
            #expect(try JSONParser.parse(UnsafeRawBufferPointer(rebasing: buffer[2..<9])) == expected)
        }
        #expect(try JSONParser.parse(#"[1,"a"]"#.utf8) == expected)
        #expect(try JSONValue(parsing: #"[1,"a"]"#) == expected)
    }

    // MARK: - Invalid documents

    static let invalidDocuments: [(text: String, reason: String, offset: Int)] = [
        // Structure
        ("", "unexpected end of input", 0),
        ("   ", "unexpected end of input", 3),
        ("[", "unexpected end of input", 1),
        ("[1,", "unexpected end of input", 3),
        ("{\"a\":", "unexpected end of input", 5),
        ("{\"a\"", "unexpected end of input", 4),
        ("}", "unexpected character '}'", 0),
        ("]", "unexpected character ']'", 0),
        ("[1,]", "unexpected character ']'", 3),
        ("[,1]", "unexpected character ','", 1),
        ("[1 2]", "unexpected character '2'", 3),
        ("[1:2]", "unexpected character ':'", 2),
        ("{\"a\" 1}", "unexpected character '1'", 5),
        ("{,}", "unexpected character ','", 1),
        ("{\"a\":1,}", "unexpected character '}'", 7),
        ("{\"a\":1]", "unexpected character ']'", 6),
        ("[1}", "unexpected character '}'", 2),
        ("{1:2}", "unexpected character '1'", 1),
        ("{'a':1}", "unexpected character '''", 1),
        ("{a:1}", "unexpected character 'a'", 1),
        ("[1]]", "trailing characters after the value", 3),
        ("1 2", "trailing characters after the value", 2),
        ("{} {}", "trailing characters after the value", 3),
        ("[] x", "trailing characters after the value", 3),
        // Literals are lowercase and complete
        ("nul", "unexpected end of input", 3),
        ("nulL", "unexpected character 'L'", 3),
        ("True", "unexpected character 'T'", 0),
        ("[truth]", "unexpected character 't'", 4),
        ("[NaN]", "unexpected character 'N'", 1),
        ("Infinity", "unexpected character 'I'", 0),
        ("undefined", "unexpected character 'u'", 0),
        // Only space, tab, CR and LF are whitespace
        ("\u{0C}1", "unexpected byte 0x0C", 0),
        ("\u{0B}1", "unexpected byte 0x0B", 0),
        ("[1,\u{A0}2]", "unexpected byte 0xC2", 3),
        ("\u{FEFF}1", "unexpected byte 0xEF", 0),
        ("1\u{0}", "trailing characters after the value", 1),
        // Strings
        ("\"abc", "unterminated string", 0),
        ("[\"abc]", "unterminated string", 1),
        ("\"\\", "unterminated string", 0),
        ("\"\\u12", "unterminated string", 0),
        ("\"a\u{1}b\"", "control character in string", 2),
        ("\"\t\"", "control character in string", 1),
        ("\"line\nbreak\"", "control character in string", 5),
        ("\"\u{1F}\"", "control character in string", 1),
        ("\"\\x\"", "invalid escape", 1),
        ("\"\\'\"", "invalid escape", 1),
        ("\"\\u12G4\"", "invalid escape", 1),
        ("\"\\U0041\"", "invalid escape", 1),
        ("\"ab\\ \"", "invalid escape", 3),
        // Numbers
        ("01", "invalid number", 0),
        ("00", "invalid number", 0),
        ("-01", "invalid number", 0),
        ("-", "invalid number", 1),
        ("-a", "invalid number", 1),
        ("--1", "invalid number", 1),
        ("- 1", "invalid number", 1),
        ("+1", "unexpected character '+'", 0),
        (".5", "unexpected character '.'", 0),
        ("1.", "invalid number", 2),
        ("1.e5", "invalid number", 2),
        ("[1.]", "invalid number", 3),
        ("1e", "invalid number", 2),
        ("1e+", "invalid number", 3),
        ("1E-x", "invalid number", 3),
        ("0x10", "trailing characters after the value", 1),
        ("1e400", "number out of range", 0),
        ("[-1e400]", "number out of range", 1),
        ("1" + String(repeating: "0", count: 400), "number out of range", 0),
        ("17976931348623159e292", "number out of range", 0),
    ]

    @Test("rejects invalid documents with a reason and offset", arguments: invalidDocuments.indices)
    func invalidDocument(index: Int) {
        let (text, reason, offset) = Self.invalidDocuments[index]
        let error = parseError(text)
        #expect(error?.reason == reason, "\(text.debugDescription)")
        #expect(error?.offset == offset, "\(text.debugDescription)")
    }

    @Test("errors report 1-based line and byte column")
    func lineAndColumn() {
        let error = parseError("{\n  \"a\": 1,\n  \"b\": [1, 2,]\n}")
        #expect(error == JSONParseError(reason: "unexpected character ']'", offset: 25, line: 3, column: 14))
        #expect(error?.description == "unexpected character ']' at line 3, column 14")

        // Columns count bytes: "é" is two.
        let multibyte = parseError("[\"é\" x]")
        #expect(multibyte?.line == 1)
        #expect(multibyte?.column == 7)

        // CRLF line ends count once, at the LF.
        let crlf = parseError("[\r\n1,\r\n]")
        #expect(crlf?.line == 3)
        #expect(crlf?.column == 1)

        let end = parseError("[\n")
        #expect(end == JSONParseError(reason: "unexpected end of input", offset: 2, line: 2, column: 1))
    }

    // MARK: - Numbers

    static let numbers: [(text: String, value: Double)] = [
        ("0", 0),
        ("1", 1),
        ("-1", -1),
        ("123456789012345", 123_456_789_012_345),
        ("1234567890123456789", 1_234_567_890_123_456_768),
        ("9007199254740993", 9_007_199_254_740_992),  // rounds to even
        ("0.5", 0.5),
        ("-0.125", -0.125),
        ("0.1", 0.1),
        ("0.30000000000000004", 0.30000000000000004),
        ("1e2", 100),
        ("1E2", 100),
        ("1e+2", 100),
        ("1e-2", 0.01),
        ("0.1e1", 1),
        ("123.456e-2", 1.23456),
        ("0.000001", 0.000001),
        ("1.5e300", 1.5e300),
        ("1e22", 1e22),
        ("1e23", 1e23),
        ("100000000000000000000000000000000000001", 1e38),
        ("2.2250738585072014e-308", 2.2250738585072014e-308),
        ("2.2250738585072011e-308", Double.leastNormalMagnitude.nextDown),  // largest subnormal
        ("2.2250738585072012e-308", .leastNormalMagnitude),
        ("5e-324", .leastNonzeroMagnitude),
        ("1.7976931348623157e308", .greatestFiniteMagnitude),
        ("1e-400", 0),
        ("0e999999999999", 0),
        ("1e00000000000000000000000002", 100),
    ]

    @Test("converts numbers exactly", arguments: numbers.indices)
    func number(index: Int) throws {
        let (text, value) = Self.numbers[index]
        #expect(try JSONParser.parse(text).doubleValue == value, "\(text)")
    }

    @Test("keeps the sign of negative zero")
    func negativeZero() throws {
        #expect(try JSONParser.parse("-0").doubleValue?.sign == .minus)
        #expect(try JSONParser.parse("-0.0e5").doubleValue?.sign == .minus)
        #expect(try JSONParser.parse("-1e-400").doubleValue?.sign == .minus)
        #expect(try JSONParser.parse("0").doubleValue?.sign == .plus)
    }

    @Test("fast paths agree with correctly rounded conversion")
    func conversionAgreesWithStandardLibrary() throws {
        // A deterministic mix of short and long significands and exponents.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: UInt64) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % bound)
        }
        for _ in 0..<20_000 {
            var text = next(4) == 0 ? "-" : ""
            let integerDigits = 1 + next(20)
            text += String(1 + next(9))
            for _ in 1..<integerDigits { text += String(next(10)) }
            if next(2) == 0 {
                text += "."
                for _ in 0..<(1 + next(20)) { text += String(next(10)) }
            }
            if next(2) == 0 { text += "e" + (next(2) == 0 ? "-" : "") + String(next(40)) }
            #expect(try JSONParser.parse(text).doubleValue == Double(text), "\(text)")
        }
    }

    // MARK: - Strings

    static let strings: [(json: String, value: String)] = [
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
        (#""\u0041\u00e9\u00E9\u20AC""#, "Aéé€"),
        (#""\u0000""#, "\u{0}"),
        (#""\uD83D\uDE00""#, "😀"),
        (#""\ud83d\ude00 and \uD834\uDD1E""#, "😀 and 𝄞"),
        (#""\uD83D""#, "\u{FFFD}"),  // lone high surrogate
        (#""\uDE00""#, "\u{FFFD}"),  // lone low surrogate
        (#""\uD83Dx""#, "\u{FFFD}x"),
        (#""\uD83D\u0041""#, "\u{FFFD}A"),
        (#""\uD83D\uD83D\uDE00""#, "\u{FFFD}😀"),
        (#""\uDE00\uD83D""#, "\u{FFFD}\u{FFFD}"),
        (#""\uD83D\n""#, "\u{FFFD}\n"),
        ("\"é😀 raw UTF-8\"", "é😀 raw UTF-8"),
        ("\"\u{7F}\"", "\u{7F}"),  // DEL is not a control character in JSON
        ("\"a long string without any escapes, long enough for the eight-byte scan\"",
         "a long string without any escapes, long enough for the eight-byte scan"),
        (#""escapes after a long plain run: 0123456789\n""#, "escapes after a long plain run: 0123456789\n"),
    ]

    @Test("decodes escapes and surrogate pairs", arguments: strings.indices)
    func string(index: Int) throws {
        let (json, value) = Self.strings[index]
        #expect(try JSONParser.parse(json) == .string(value))
    }

    @Test("escaped keys are decoded")
    func escapedKeys() throws {
        #expect(try JSONParser.parse(#"{"a\"b":1,"\u00e9":2}"#) == ["a\"b": 1, "é": 2])
    }

    static let validUTF8: [[UInt8]] = [
        [0x7F],
        [0xC2, 0x80], [0xDF, 0xBF],  // two bytes
        [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF],  // three
        [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],  // four, up to U+10FFFF
    ]

    @Test("accepts every UTF-8 sequence shape", arguments: validUTF8)
    func validUTF8Sequence(bytes: [UInt8]) throws {
        #expect(try JSONParser.parse(quoted(bytes)) == .string(String(decoding: bytes, as: UTF8.self)))
    }

    static let invalidUTF8: [(bytes: [UInt8], why: String)] = [
        ([0xC0, 0xAF], "overlong '/'"),
        ([0xC1, 0xBF], "overlong two-byte"),
        ([0xE0, 0x80, 0xAF], "overlong three-byte"),
        ([0xF0, 0x80, 0x80, 0xAF], "overlong four-byte"),
        ([0xED, 0xA0, 0x80], "UTF-8 encoded surrogate U+D800"),
        ([0xED, 0xBF, 0xBF], "UTF-8 encoded surrogate U+DFFF"),
        ([0xF4, 0x90, 0x80, 0x80], "U+110000"),
        ([0xF5, 0x80, 0x80, 0x80], "lead byte above F4"),
        ([0xFF], "FF never appears"),
        ([0x80], "lone continuation byte"),
        ([0xC2], "truncated two-byte"),
        ([0xE2, 0x82], "truncated three-byte"),
        ([0xF0, 0x9F, 0x98], "truncated four-byte"),
        ([0xC2, 0x41], "ASCII where a continuation belongs"),
        ([0xE2, 0x82, 0xC0], "bad third byte"),
    ]

    @Test("rejects malformed UTF-8 in strings at the lead byte", arguments: invalidUTF8.indices)
    func invalidUTF8Sequence(index: Int) {
        let (bytes, why) = Self.invalidUTF8[index]
        let error = parseError(quoted(bytes))
        #expect(error?.reason == "invalid UTF-8", "\(why)")
        #expect(error?.offset == 1, "\(why)")
        // Also after a long ASCII run, where the eight-byte scan hands over.
        let late = parseError(quoted(Array("0123456789abcdef".utf8) + bytes + Array("xyz".utf8)))
        #expect(late?.reason == "invalid UTF-8", "\(why)")
        #expect(late?.offset == 17, "\(why)")
    }

    @Test("rejects a sequence cut off by the end of input")
    func utf8TruncatedByEnd() {
        #expect(parseError([0x22, 0xE2, 0x82])?.reason == "invalid UTF-8")
        #expect(parseError([0x22, 0xE2, 0x82, 0xAC])?.reason == "unterminated string")
    }

    // MARK: - Nesting

    static func nestedArrays(_ depth: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(ascii: "["), count: depth) + [UInt8](repeating: UInt8(ascii: "]"), count: depth)
    }

    static func nestedObjects(_ depth: Int) -> [UInt8] {
        Array(String(repeating: #"{"a":"#, count: depth).utf8) + [UInt8(ascii: "1")]
            + [UInt8](repeating: UInt8(ascii: "}"), count: depth)
    }

    @Test("nesting up to the maximum depth works on a 512 KiB stack")
    func deepButAllowed() {
        let results = onSmallStack {
            [999, 1000].map { depth in
                (parseError(Self.nestedArrays(depth)), parseError(Self.nestedObjects(depth)))
            }
        }
        for (arrays, objects) in results {
            #expect(arrays == nil)
            #expect(objects == nil)
        }
    }

    @Test("nesting beyond the maximum depth is an error, however deep", arguments: [1001, 100_000])
    func tooDeep(depth: Int) {
        let (arrays, objects) = onSmallStack {
            (parseError(Self.nestedArrays(depth)), parseError(Self.nestedObjects(depth)))
        }
        #expect(arrays?.reason == "nesting deeper than 1000 levels")
        #expect(arrays?.offset == 1000)
        #expect(objects?.reason == "nesting deeper than 1000 levels")
        #expect(objects?.offset == 5000)
    }

    @Test("the depth limit is configurable")
    func customDepth() {
        #expect(parseError(Array("[[1]]".utf8), maximumDepth: 2) == nil)
        #expect(parseError(Array("[[1]]".utf8), maximumDepth: 1)?.reason == "nesting deeper than 1 levels")
        #expect(parseError(Array("[[]]".utf8), maximumDepth: 1)?.offset == 1)
        #expect(parseError(Array("1".utf8), maximumDepth: 0) == nil)
        #expect(parseError(Array("{}".utf8), maximumDepth: 0)?.offset == 0)
    }
}
