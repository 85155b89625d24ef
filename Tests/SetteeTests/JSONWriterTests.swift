import Testing
import SetteeCore
@testable import Settee

@Suite("JSONWriter")
struct JSONWriterTests {
    /// Expected strings are what `node -e 'console.log(String(x))'` prints (node v20).
    static let numbers: [(value: Double, text: String)] = [
        (1, "1"),
        (-1, "-1"),
        (0, "0"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1.5, "1.5"),
        (100, "100"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123e-20, "1.23e-18"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (.leastNonzeroMagnitude, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (9_007_199_254_740_992, "9007199254740992"),  // 2^53
        (0.30000000000000004, "0.30000000000000004"),
        (-1.25e-10, "-1.25e-10"),
        (123_456_789_012_345_683_968, "123456789012345680000"),
        (1.5e300, "1.5e+300"),
        (-2.5e-7, "-2.5e-7"),
        (4.35, "4.35"),
        (1e15, "1000000000000000"),
        (1e16, "10000000000000000"),
        (9_007_199_254_740_994, "9007199254740994"),  // 2^53 + 2
        (1_152_921_504_606_846_976, "1152921504606847000"),  // 2^60: shortest digits, then zeros
        (1.0 / 3.0, "0.3333333333333333"),
        (-1e-7, "-1e-7"),
        (12345.6789, "12345.6789"),
        (1e100, "1e+100"),
        (2.2250738585072014e-308, "2.2250738585072014e-308"),
        (9.999999999999999e20, "999999999999999900000"),
        (1e-5, "0.00001"),
        (0.00001234, "0.00001234"),
        (-123.0, "-123"),
    ]

    @Test("numbers are laid out like ECMAScript Number::toString", arguments: numbers.indices)
    func number(index: Int) {
        let (value, text) = Self.numbers[index]
        #expect(JSONValue.number(value).jsonText == text)
    }

    @Test("non-finite numbers become null, as in JSON.stringify")
    func nonFinite() {
        #expect(JSONValue.number(.nan).jsonText == "null")
        #expect(JSONValue.number(.infinity).jsonText == "null")
        #expect(JSONValue.number(-.infinity).jsonText == "null")
        #expect(JSONWriter.string([1, .number(.nan)]) == "[1,null]")
    }

    static let strings: [(value: String, json: String)] = [
        ("", #""""#),
        ("plain", #""plain""#),
        ("quote \" backslash \\ slash /", #""quote \" backslash \\ slash /""#),
        ("\u{8}\u{C}\n\r\t", #""\b\f\n\r\t""#),
        ("\u{0}\u{1}\u{1F}", #""\u0000\u0001\u001f""#),
        ("\u{7F}", "\"\u{7F}\""),  // DEL stays literal
        ("é😀\u{2028}\u{2029}", "\"é😀\u{2028}\u{2029}\""),  // non-ASCII stays literal UTF-8
        ("\u{FFFD}", "\"\u{FFFD}\""),
    ]

    @Test("strings are escaped like JSON.stringify", arguments: strings.indices)
    func string(index: Int) {
        let (value, json) = Self.strings[index]
        #expect(JSONValue.string(value).jsonText == json)
        var bytes: [UInt8] = [UInt8(ascii: "x")]
        JSONWriter.writeString(value, into: &bytes)
        #expect(bytes == [UInt8(ascii: "x")] + Array(json.utf8), "appends to what is there")
    }

    @Test("escapes are found wherever they fall in a long string, and parse back")
    func escapesAtEveryPosition() throws {
        let specials: [(character: String, escaped: String)] = [
            ("\"", #"\""#), ("\\", #"\\"#), ("\n", #"\n"#), ("\u{1}", #"\u0001"#), ("\u{1F}", #"\u001f"#),
            ("é", "é"), ("😀", "😀"), ("/", "/"),
        ]
        let filler = Array("abcdefghijklmnopqrstuvwxyz")
        for (character, escaped) in specials {
            for position in 0..<20 {
                let prefix = String(filler[..<position])
                let suffix = String(filler[position..<24])
                let text = prefix + character + suffix
                let json = "\"" + prefix + escaped + suffix + "\""
                #expect(JSONValue.string(text).jsonText == json)
                #expect(try JSONParser.parse(json) == .string(text))
            }
        }
    }

    @Test("containers are compact and keep member order")
    func containers() {
        let value: JSONValue = ["z": [1, "a", nil, true, false], "a": [:], "m": [], "k\"ey": ["n": 1.5]]
        #expect(value.jsonText == #"{"z":[1,"a",null,true,false],"a":{},"m":[],"k\"ey":{"n":1.5}}"#)
        #expect(value.description == value.jsonText)
        #expect(JSONValue.object([(key: "k", value: 1), (key: "k", value: 2)]).jsonText == #"{"k":1,"k":2}"#)
    }

    @Test("write appends to existing bytes")
    func appends() {
        var bytes = Array("prefix:".utf8)
        JSONWriter.write(["a": 1], into: &bytes)
        JSONWriter.writeNumber(2.5, into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"prefix:{"a":1}2.5"#)
    }

    /// Texts already in `JSON.stringify` form come back byte for byte.
    static let canonicalTexts = [
        "null", "true", "false", "0", "-1", "1.5", "1e+21", "1e-7", "0.000001", "5e-324",
        #""""#, #""\"\\\b\f\n\r\t\u0000\u001f é😀/""#,
        "[]", "{}", "[[],{},[{}]]",
        #"{"_id":"doc-1","_rev":"1-967a00dff5e02add41819138abb3284d","n":[1,2.5,-3e-7],"nested":{"b":false,"a":null}}"#,
        #"[123456789012345680000,1.7976931348623157e+308,0.30000000000000004]"#,
    ]

    @Test("parse then write reproduces canonical text", arguments: canonicalTexts)
    func roundTrip(text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(value.jsonText == text)
        #expect(try JSONParser.parse(value.jsonText) == value)
    }

    @Test("parse then write normalises whitespace, escapes and numbers")
    func normalisation() throws {
        let cases: [(input: String, output: String)] = [
            (" [ 1 , 2 ] ", "[1,2]"),
            (#""\u0041\/\u00e9\uD83D\uDE00""#, #""A/é😀""#),
            (#""\u001F\u007f""#, "\"\\u001f\u{7F}\""),
            ("[1.0, 1E2, -0, 0.10, 1e-07, 100e-2]", "[1,100,0,0.1,1e-7,1]"),
            ("1e21", "1e+21"),
        ]
        for (input, output) in cases {
            #expect(try JSONParser.parse(input).jsonText == output, "\(input)")
        }
    }

    @Test("deeply nested values are written")
    func deep() throws {
        let text = String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)
        #expect(try JSONParser.parse(text).jsonText == text)
    }
}
