import Testing
import SetteeCore
@testable import Settee

/// Scans `text`, returning the members or the error.
private func scan(_ text: String, maximumDepth: Int = JSONParser.defaultMaximumDepth) -> Result<[JSONObjectMember], JSONScanError> {
    scan(Array(text.utf8), maximumDepth: maximumDepth)
}

private func scan(_ bytes: [UInt8], maximumDepth: Int = JSONParser.defaultMaximumDepth) -> Result<[JSONObjectMember], JSONScanError> {
    bytes.withUnsafeBytes { buffer in
        Result { () throws(JSONScanError) in try JSONObjectScanner.scan(buffer, maximumDepth: maximumDepth) }
    }
}

private func scanError(_ text: String) -> JSONScanError? {
    if case .failure(let error) = scan(text) { return error }
    return nil
}

/// The text of `range` in `text`.
private func slice(_ text: String, _ range: Range<Int>) -> String {
    String(decoding: Array(text.utf8)[range], as: UTF8.self)
}

@Suite("JSONObjectScanner")
struct JSONObjectScannerTests {
    static let sample = """
        {
          "_id": "doc-1",
          "_rev": "3-b2e0c0ba6d4d4a5e8f1c1c8e2a7c9d01",
          "type" : "order",
          "total": -12.5e1,
          "items": [ {"sku": "A\\u00e9", "qty": 2}, {"sku": "B", "qty": [1, [2, {}]]} ],
          "meta": {"tags": ["x", "y"], "empty": {}, "none": null},
          "flag":true,
          "k\\"ey": "v"
        }
        """

    @Test("lists top-level members in order with exact key and value ranges")
    func sampleDocument() throws {
        let members = try scan(Self.sample).get()
        #expect(members.map(\.key) == ["_id", "_rev", "type", "total", "items", "meta", "flag", "k\"ey"])
        let keyTexts = members.map { slice(Self.sample, $0.keyRange) }
        #expect(keyTexts == [#""_id""#, #""_rev""#, #""type""#, #""total""#, #""items""#, #""meta""#, #""flag""#, #""k\"ey""#])
        let valueTexts = members.map { slice(Self.sample, $0.valueRange) }
        #expect(valueTexts == [
            #""doc-1""#,
            #""3-b2e0c0ba6d4d4a5e8f1c1c8e2a7c9d01""#,
            #""order""#,
            "-12.5e1",
            #"[ {"sku": "A\u00e9", "qty": 2}, {"sku": "B", "qty": [1, [2, {}]]} ]"#,
            #"{"tags": ["x", "y"], "empty": {}, "none": null}"#,
            "true",
            #""v""#,
        ])
    }

    @Test("ranges are byte offsets, keys include their quotes")
    func exactRanges() throws {
        #expect(try scan(#"{"a":1}"#).get() == [JSONObjectMember(key: "a", keyRange: 1..<4, valueRange: 5..<6)])
        #expect(try scan(#" { "é" : [1, 2] , "b":{} } "#).get() == [
            JSONObjectMember(key: "é", keyRange: 3..<7, valueRange: 10..<16),
            JSONObjectMember(key: "b", keyRange: 19..<22, valueRange: 23..<25),
        ])
        #expect(try scan("{}").get().isEmpty)
        #expect(try scan(" \n{ }\t").get().isEmpty)
    }

    @Test("a member's value parses on its own to the same value as in the whole document")
    func materialiseMembers() throws {
        let whole = try JSONParser.parse(Self.sample)
        let members = try scan(Self.sample).get()
        let bytes = Array(Self.sample.utf8)
        try bytes.withUnsafeBytes { buffer throws in
            for (member, expected) in zip(members, whole.objectValue ?? []) {
                #expect(member.key == expected.key)
                #expect(try JSONParser.parse(UnsafeRawBufferPointer(rebasing: buffer[member.valueRange])) == expected.value)
            }
        }
    }

    @Test("valid JSON that is not an object is reported as such", arguments: [
        ("[]", "array"), (" [1, {\"a\": 2}] ", "array"), (#""x""#, "string"), ("12", "number"),
        ("-0.5e3", "number"), ("true", "true"), ("false", "false"), ("null", "null"),
    ])
    func notAnObject(text: String, found: String) {
        #expect(scanError(text) == .notAnObject(found: found))
    }

    @Test("invalid JSON that is not an object is malformed", arguments: [
        ("", "unexpected end of input"), ("   ", "unexpected end of input"), ("}", "unexpected character '}'"),
        ("[1,", "unexpected end of input"), ("tru", "unexpected end of input"), ("1 2", "trailing characters after the value"),
        ("01", "invalid number"), ("[1e400]", "number out of range"),
    ])
    func malformedNonObject(text: String, reason: String) {
        guard case .malformed(let error) = scanError(text) else {
            Issue.record("expected malformed for \(text.debugDescription)")
            return
        }
        #expect(error.reason == reason)
    }

    @Test("the object itself must be well formed")
    func malformedObject() {
        let cases: [(text: String, reason: String, offset: Int)] = [
            ("{", "unexpected end of input", 1),
            (#"{"a"}"#, "unexpected character '}'", 4),
            (#"{"a":}"#, "unexpected character '}'", 5),
            (#"{"a":1,}"#, "unexpected character '}'", 7),
            (#"{"a":1 "b":2}"#, "unexpected character '\"'", 7),
            (#"{a:1}"#, "unexpected character 'a'", 1),
            (#"{"a":1}}"#, "trailing characters after the value", 7),
            (#"{"a":1} x"#, "trailing characters after the value", 8),
            ("{\"a\":1}\n{\"b\":2}", "trailing characters after the value", 8),
            ("{\n\"a\":\n[1,,2]}", "unexpected character ','", 10),
        ]
        for (text, reason, offset) in cases {
            guard case .malformed(let error) = scanError(text) else {
                Issue.record("expected malformed for \(text.debugDescription)")
                continue
            }
            #expect(error.reason == reason, "\(text.debugDescription)")
            #expect(error.offset == offset, "\(text.debugDescription)")
        }
        if case .malformed(let error) = scanError("{\n\"a\":\n[1,,2]}") {
            #expect(error.description == "unexpected character ',' at line 3, column 4")
        }
    }

    /// Nested values are validated as strictly as the parser validates them.
    static let invalidNestedValues: [String] = [
        "01", "1.", "-", "1e400", "-1e400", "1" + String(repeating: "0", count: 309), "+1", ".5",
        #""\x""#, #""\u12G4""#, "\"a\u{1}\"", #""abc"#, "tru", "nul", "[1,]", "[1 2]", "{\"a\" 1}", "{,}",
        #"{"a":1,}"#, "[", "{", "]", "NaN",
    ]

    @Test("nested values get the parser's errors, at the same offsets", arguments: invalidNestedValues)
    func nestedValidation(value: String) {
        for wrapped in [#"{"k":"# + value + "}", #"{"k":[0,{"j":"# + value + "}]}"] {
            let parserError: JSONParseError?
            do throws(JSONParseError) {
                _ = try JSONParser.parse(wrapped)
                parserError = nil
            } catch {
                parserError = error
            }
            #expect(parserError != nil, "\(wrapped)")
            #expect(scanError(wrapped) == parserError.map { .malformed($0) }, "\(wrapped)")
        }
    }

    @Test("nested strings must be valid UTF-8")
    func nestedUTF8() {
        let invalid: [[UInt8]] = [[0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]]
        for sequence in invalid {
            let document = Array(#"{"k":["ok",""#.utf8) + sequence + Array(#""]}"#.utf8)
            guard case .failure(.malformed(let error)) = scan(document) else {
                Issue.record("expected malformed for \(sequence)")
                continue
            }
            #expect(error.reason == "invalid UTF-8")
            #expect(error.offset == 12)
        }
        let key = Array(#"{""#.utf8) + [0xED, 0xA0, 0x80] + Array(#"":1}"#.utf8)
        guard case .failure(.malformed(let error)) = scan(key) else {
            Issue.record("expected malformed key")
            return
        }
        #expect(error.reason == "invalid UTF-8")
    }

    static func nestedDocument(_ depth: Int) -> [UInt8] {
        // The outer object is level 1; the arrays inside it are levels 2 and up.
        Array(#"{"a":"#.utf8) + [UInt8](repeating: UInt8(ascii: "["), count: depth - 1)
            + [UInt8](repeating: UInt8(ascii: "]"), count: depth - 1) + [UInt8(ascii: "}")]
    }

    @Test("nesting up to the maximum depth is accepted")
    func deepButAllowed() {
        let results = onSmallStack { [999, 1000].map { depth in scan(Self.nestedDocument(depth)) } }
        for result in results {
            #expect((try? result.get())?.count == 1)
        }
    }

    @Test("nesting beyond the maximum depth is an error without stack growth", arguments: [1001, 100_000, 1_000_000])
    func tooDeep(depth: Int) {
        let result = onSmallStack { scan(Self.nestedDocument(depth)) }
        guard case .failure(.malformed(let error)) = result else {
            Issue.record("expected a depth error")
            return
        }
        #expect(error.reason == "nesting deeper than 1000 levels")
        #expect(error.offset == 5 + 999)
    }

    @Test("deep mixed nesting of objects and arrays")
    func deepMixed() {
        let depth = 100_000
        let open = String(repeating: #"{"a":["#, count: depth / 2)
        let close = String(repeating: "]}", count: depth / 2)
        let result = onSmallStack { scan(open + "1" + close) }
        #expect(result.map(\.count) == .failure(.malformed(JSONParseError(
            reason: "nesting deeper than 1000 levels", offset: 3000, line: 1, column: 3001
        ))))
        // Within the limit, the bit stack spills past 64 levels and comes back.
        let shallow = String(repeating: #"{"a":["#, count: 300) + "1" + String(repeating: "]}", count: 300)
        #expect((try? scan(shallow).get())?.count == 1)
        let broken = String(repeating: #"{"a":["#, count: 300) + "1" + String(repeating: "]}", count: 299) + "}}"
        #expect(scanError(broken) != nil)
    }

    @Test("the depth limit is configurable")
    func customDepth() {
        #expect((try? scan(#"{"a":[1]}"#, maximumDepth: 2).get())?.count == 1)
        #expect(scanError(#"{"a":[[1]]}"#) == nil)
        if case .failure(.malformed(let error)) = scan(#"{"a":[[1]]}"#, maximumDepth: 2) {
            #expect(error.offset == 6)
        } else {
            Issue.record("expected a depth error")
        }
    }
}
