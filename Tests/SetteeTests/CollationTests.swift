import Testing
import CSetteeCollation
import SetteeCore
@testable import Settee

/// CouchDB's view collation, as `CollationKey` encodes it into bytes.
///
/// Sources: apache/couchdb `src/docs/src/ddocs/views/collation.rst`,
/// `src/couch/test/eunit/couch_ejson_compare_tests.erl`,
/// `src/couch_mrview/test/eunit/couch_mrview_collation_tests.erl` and
/// `test/elixir/test/view_collation_raw_test.exs`.
@Suite("Collation")
struct CollationTests {
    // MARK: Helpers

    static func json(_ text: String) -> JSONValue {
        try! JSONParser.parse(text)
    }

    static func memcmp(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.lexicographicallyPrecedes(b) ? -1 : a == b ? 0 : 1
    }

    static func describe(_ value: JSONValue) -> String {
        JSONWriter.string(value)
    }

    /// Checks that `values`, which are in strictly increasing collation order, are
    /// ordered so by the encoding and by the reference comparator, pair by pair,
    /// and that sorting a shuffled copy by either gives the list back.
    static func expectStrictlyOrdered(_ values: [JSONValue], mode: CollationMode, sourceLocation: SourceLocation = #_sourceLocation) {
        let keys = values.map { CollationKey.encode($0, mode: mode) }
        for i in values.indices {
            for j in values.indices {
                let expected = i < j ? -1 : i == j ? 0 : 1
                let byBytes = memcmp(keys[i], keys[j])
                let byCompare = CollationKey.compare(values[i], values[j], mode: mode)
                #expect(byBytes == expected, "encoding: \(describe(values[i])) vs \(describe(values[j]))", sourceLocation: sourceLocation)
                #expect(byCompare == expected, "compare: \(describe(values[i])) vs \(describe(values[j]))", sourceLocation: sourceLocation)
            }
        }
        var generator = SplitMix64(seed: 0xC0FFEE)
        for _ in 0..<5 {
            let shuffled = Array(values.indices).shuffled(using: &generator)
            let byBytes = shuffled.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
            let byCompare = shuffled.sorted { CollationKey.compare(values[$0], values[$1], mode: mode) < 0 }
            #expect(byBytes == Array(values.indices), sourceLocation: sourceLocation)
            #expect(byCompare == Array(values.indices), sourceLocation: sourceLocation)
        }
    }

    /// Checks that all `values` collate equal, by encoding and by comparator.
    static func expectAllEqual(_ values: [JSONValue], mode: CollationMode, sourceLocation: SourceLocation = #_sourceLocation) {
        let first = CollationKey.encode(values[0], mode: mode)
        for value in values.dropFirst() {
            #expect(CollationKey.encode(value, mode: mode) == first, "\(describe(value)) vs \(describe(values[0]))", sourceLocation: sourceLocation)
            #expect(CollationKey.compare(value, values[0], mode: mode) == 0, sourceLocation: sourceLocation)
            #expect(CollationKey.compare(values[0], value, mode: mode) == 0, sourceLocation: sourceLocation)
        }
    }

    // MARK: Unicode collation (the default)

    /// collation.rst's "Collation Specification" merged with the TEST_VALUES of
    /// couch_ejson_compare_tests.erl, plus the empty string, array and object.
    static let couchDBOrder: [JSONValue] = [
        // special values sort before all other types
        nil, false, true,
        // then numbers
        -2, -0.1, 0, 0.1, 1, 2, 3.0, 4,
        // then text, case sensitive
        "", "a", "A", "aa", "b", "B", "ba", "bb",
        // the highest-sorting character (the erl test's <<255,255,255,255>> is not valid UTF-8)
        "\u{FFFF}",
        // then arrays, compared element by element until different; longer arrays after their prefixes
        [], ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
        // then objects, member by member; larger objects after their subset objects
        [:], ["a": 1], ["a": 2], ["b": 1], ["b": 2],
        ["b": 2, "a": 1],  // member order matters
        ["b": 2, "c": 2],
    ]

    @Test("CouchDB's collation list sorts in order by encoding and by comparator")
    func couchDBList() {
        Self.expectStrictlyOrdered(Self.couchDBOrder, mode: .unicode)
    }

    @Test("Strings: symbols before digits before letters; lowercase first among equal letters")
    func asciiStrings() {
        // collation.rst: "All symbols sort before numbers and letters (even the
        // "high" symbols like tilde, 0x7e)". The exact order among symbols
        // depends on the UCA version, so only their class is checked.
        let symbols = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$".map { JSONValue.string(String($0)) }
        let digits = "0123456789".map { JSONValue.string(String($0)) }
        let letters = "aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ".map { JSONValue.string(String($0)) }
        Self.expectStrictlyOrdered(digits, mode: .unicode)
        Self.expectStrictlyOrdered(letters, mode: .unicode)
        for symbol in symbols {
            for other in digits + letters {
                #expect(CollationKey.compare(symbol, other, mode: .unicode) == -1)
                #expect(Self.memcmp(CollationKey.encode(symbol, mode: .unicode), CollationKey.encode(other, mode: .unicode)) == -1)
            }
        }
        for digit in digits {
            for letter in letters {
                #expect(Self.memcmp(CollationKey.encode(digit, mode: .unicode), CollationKey.encode(letter, mode: .unicode)) == -1)
            }
        }
        // Symbols are distinct from each other.
        let symbolKeys = Set(symbols.map { CollationKey.encode($0, mode: .unicode) })
        #expect(symbolKeys.count == symbols.count)
    }

    @Test("Strings: letters compare without case first, then lowercase before uppercase")
    func caseRules() {
        // collation.rst: a < aa, A < aa, a < AA; a < A; and the key-range example.
        Self.expectStrictlyOrdered(["a", "A", "aa", "AA"], mode: .unicode)
        Self.expectStrictlyOrdered(["abc", "Abc", "ABC", "abc1", "AbcZZZZZ"], mode: .unicode)
        // ICU, not byte order: "Z" (0x5A) before "a" (0x61) in bytes, after it here.
        Self.expectStrictlyOrdered(["a", "Z"], mode: .unicode)
        Self.expectStrictlyOrdered(["e", "E", "é", "É", "f"], mode: .unicode)
        Self.expectStrictlyOrdered(["abc", "abc\u{FFF0}", "abd"], mode: .unicode)
    }

    @Test("Equal values encode identically: 1 and 1.0, -0 and 0, ignorable characters")
    func equalities() {
        Self.expectAllEqual([1, 1.0, Self.json("1.0"), Self.json("1e0"), Self.json("10e-1")], mode: .unicode)
        Self.expectAllEqual([0, -0.0, Self.json("-0"), Self.json("0.0e5")], mode: .unicode)
        // Zero-width characters are ignored by ICU (couch_ejson_compare_tests.erl).
        Self.expectAllEqual(["a", "a\u{200B}", "\u{200B}a", "\u{200C}a\u{200D}\u{200B}"], mode: .unicode)
        Self.expectAllEqual(["c", "c\u{200B}", "c\u{200B}\u{200B}"], mode: .unicode)
        Self.expectAllEqual(["", "\u{200B}"], mode: .unicode)
        // Canonically equivalent strings: precomposed and combining é.
        Self.expectAllEqual(["\u{E9}", "e\u{301}"], mode: .unicode)
        // Equality carries into containers.
        Self.expectAllEqual([[1, "a"], [1.0, "a\u{200B}"]], mode: .unicode)
        Self.expectAllEqual([["k": 1], ["k\u{200B}": 1.0]], mode: .unicode)
        Self.expectAllEqual([[[[[[]]]]], [[[[[]]]]]], mode: .unicode)
    }

    @Test("Long strings take the heap path for their sort keys")
    func longStrings() {
        let long = String(repeating: "a", count: 1000)
        let key = CollationKey.encode(.string(long), mode: .unicode)
        #expect(key.count > 600)
        Self.expectStrictlyOrdered([.string(long), .string(long + "b"), .string("b")], mode: .unicode)
        let zeroWidth = String(repeating: "\u{200B}", count: 300)
        Self.expectAllEqual([.string(long), .string(long + zeroWidth)], mode: .unicode)
        // Just around the stack buffer's size.
        for count in 150...260 {
            let text = String(repeating: "xY", count: count)
            #expect(CollationKey.encode(.string(text), mode: .unicode) == CollationKey.encode(.string(text + "\u{200B}"), mode: .unicode))
            #expect(CollationKey.compare(.string(text), .string(text + "z"), mode: .unicode) == -1)
            #expect(Self.memcmp(CollationKey.encode(.string(text), mode: .unicode), CollationKey.encode(.string(text + "z"), mode: .unicode)) == -1)
        }
    }

    /// ICU's own sort key, neither from the ASCII table nor from a cache.
    static func icuSortKey(_ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { chars in
                let needed = Int(settee_collation_icu_sort_key(chars.baseAddress!, chars.count, nil, 0))
                return [UInt8](unsafeUninitializedCapacity: needed + 1) { buffer, count in
                    count = Int(settee_collation_icu_sort_key(chars.baseAddress!, chars.count, buffer.baseAddress!, Int32(needed + 1)))
                }
            }
        }
    }

    static func sortKey(_ text: String) -> [UInt8] {
        var text = text
        var key: [UInt8] = []
        text.withUTF8 { CollationKey.appendSortKey(UnsafeRawBufferPointer($0), to: &key) }
        return key
    }

    @Test("ASCII sort keys from the table equal ICU's: every printable character, runs past each compression limit, mixed case")
    func asciiSortKeys() {
        #expect(settee_collation_ascii_table_ready() == 1, "this ICU's keys should pass the table's self-check")
        var generator = SplitMix64(seed: 0xA5C11)
        let printable = (0x20..<0x7F).map { Character(Unicode.Scalar(UInt8($0))) }
        // Mostly table characters, with some the table leaves to ICU (controls, non-ASCII) to check the hand-over.
        let others: [Character] = ["\u{0}", "\u{1}", "\t", "\n", "\u{7F}", "é", "ß", "日", "\u{0301}"]
        var texts: [String] = ["a", "A", "-", "doc00012345", "cust-4711", "2024-01-02", "order", "Zürich",
                               String(repeating: "a", count: 64), String(repeating: "a", count: 65),
                               String(repeating: "a", count: 33) + "A", String(repeating: "a", count: 34) + "A",
                               String(repeating: "aA", count: 32), String(repeating: "Z", count: 64)]
        for _ in 0..<20_000 {
            let length = 1 + Int(generator.next() % 70)
            let uppercaseRun = generator.next() % 4 == 0
            texts.append(String((0..<length).map { _ -> Character in
                if generator.next() % 50 == 0 { return others[Int(generator.next() % UInt64(others.count))] }
                if uppercaseRun { return generator.next() % 8 == 0 ? "Q" : "q" }
                return printable[Int(generator.next() % UInt64(printable.count))]
            }))
        }
        let keys = texts.map(Self.sortKey)
        for (text, key) in zip(texts, keys) {
            #expect(key == Self.icuSortKey(text), "\(text.debugDescription)")
        }
        for _ in 0..<5000 {
            let (i, j) = (Int(generator.next() % UInt64(texts.count)), Int(generator.next() % UInt64(texts.count)))
            let order = settee_collation_compare(texts[i], texts[i].utf8.count, texts[j], texts[j].utf8.count)
            #expect(Self.memcmp(keys[i], keys[j]) == order.signum(), "\(texts[i].debugDescription) vs \(texts[j].debugDescription)")
        }
    }

    @Test("Sort keys a thread serves again from its cache equal ICU's, slots overwritten or not")
    func cachedSortKeys() {
        var generator = SplitMix64(seed: 0x5EED)
        let alphabet = Array("abcXYZ09 -_.äöüßçñ日本語한국어\u{0301}")
        var texts = ["order", "contact", "Zürich", "a\u{0}b", "ab", "AB", "ａｂ", String(repeating: "x", count: 32),
                     String(repeating: "x", count: 33), String(repeating: "日", count: 10), String(repeating: "é", count: 16)]
        // Thousands of short strings: slots are shared and overwritten.
        for _ in 0..<3000 {
            texts.append(String((0..<(1 + Int(generator.next() % 12))).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }))
        }
        let distinct = Array(Set(texts))
        let fromICU = distinct.map(Self.icuSortKey)
        let first = distinct.map(Self.sortKey)
        let again = distinct.map(Self.sortKey)
        texts = distinct
        for index in texts.indices {
            #expect(first[index] == fromICU[index], "\(texts[index].debugDescription)")
            #expect(again[index] == fromICU[index], "\(texts[index].debugDescription) from the cache")
        }
        for _ in 0..<2000 {
            let (i, j) = (Int(generator.next() % UInt64(texts.count)), Int(generator.next() % UInt64(texts.count)))
            let order = settee_collation_compare(texts[i], texts[i].utf8.count, texts[j], texts[j].utf8.count)
            #expect(Self.memcmp(again[i], again[j]) == order.signum(), "\(texts[i].debugDescription) vs \(texts[j].debugDescription)")
        }
    }

    // MARK: Raw collation

    /// view_collation_raw_test.exs (Erlang term order: number < atom < tuple <
    /// list < binary; atoms alphabetically), plus negative numbers, empty values
    /// and code-point order.
    static let rawOrder: [JSONValue] = [
        // numbers first
        -1, 0, 1, 2, 3, 4,
        // then the atoms false < null < true
        false, nil, true,
        // then objects ({Props} tuples), member by member
        [:], ["a": 1], ["a": 2], ["b": 1], ["b": 2], ["b": 2, "a": 1], ["b": 2, "c": 2],
        // then arrays (lists), element by element; [] is nil, below every list
        [], ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
        // then strings (binaries), byte by byte: uppercase before lowercase
        "", "A", "B", "a", "a\u{0}", "a\u{1}", "a\u{2}", "aa", "b", "ba", "bb",
        "c", "c\u{200B}", "c\u{200B}\u{200B}",
        "z", "é", "\u{FF00}", "\u{FFFF}", "\u{10000}", "😀",
    ]

    @Test("Raw collation list sorts in order by encoding and by comparator")
    func rawList() {
        Self.expectStrictlyOrdered(Self.rawOrder, mode: .raw)
    }

    @Test("Raw collation: numbers by value, strings by bytes")
    func rawEqualities() {
        Self.expectAllEqual([1, 1.0, Self.json("1e0")], mode: .raw)
        Self.expectAllEqual([0, -0.0], mode: .raw)
        // No ICU: ignorable and canonically equivalent strings differ.
        #expect(CollationKey.compare("a", "a\u{200B}", mode: .raw) == -1)
        #expect(CollationKey.encode("\u{E9}", mode: .raw) != CollationKey.encode("e\u{301}", mode: .raw))
        // Objects' keys are compared by bytes too.
        Self.expectStrictlyOrdered([["B": 1], ["a": 1]], mode: .raw)
    }

    @Test("The two modes disagree where CouchDB's do")
    func modesDiffer() {
        #expect(CollationKey.compare("a", "B", mode: .unicode) == -1)
        #expect(CollationKey.compare("a", "B", mode: .raw) == 1)
        #expect(CollationKey.compare(nil, false, mode: .unicode) == -1)
        #expect(CollationKey.compare(nil, false, mode: .raw) == 1)
        #expect(CollationKey.compare(["a"], ["a": 1], mode: .unicode) == -1)
        #expect(CollationKey.compare(["a"], ["a": 1], mode: .raw) == 1)
    }

    // MARK: Numbers

    @Test("Numbers order numerically across the whole double range")
    func numbers() {
        let numbers: [JSONValue] = [
            -1.7976931348623157e308, -1e300, -9007199254740992, -1000, -1.5, -1, -0.5,
            .number(-Double.leastNonzeroMagnitude), 0, .number(Double.leastNonzeroMagnitude), 2.2250738585072014e-308, 1e-10, 0.5, 1, 1.0000000000000002, 2, 10, 1000,
            9007199254740992, 1e21, 1e300, 1.7976931348623157e308,
        ]
        Self.expectStrictlyOrdered(numbers, mode: .unicode)
        Self.expectStrictlyOrdered(numbers, mode: .raw)
    }

    // MARK: Straight from JSON text

    static let jsonInputs: [String] = [
        "null", "true", "false", "0", "-0", "1", "1.0", "1e3", "1000", "1E+3", "-1.5e-3", "123456789012345678901234567890",
        "1.7976931348623157e308", "-5e-324", "4.9e-324", "0.1", "3.0",
        #""""#, #""a""#, #""A""#, #""\u00e9""#, #""e\u0301""#, #""\ud83d\ude00""#, #""😀""#, #""\n\t\r\b\f\/\\\"""#,
        #""\u0000\u0001\u0002""#, #""\ud800""#, #""lone \udc00 low""#, #""a\u200Bb""#, #""日本語""#,
        "[]", "{}", " [ ] ", "[[]]", "[[],[[]]]", #"["cust-123","2025-03-14"]"#, #"["a",1,null,true,false,{"k":"v"}]"#,
        #"{"b":2,"a":1}"#, #"{"a":{"b":{"c":[1,2,{"d":null}]}}}"#, #"{"":"","\u00e9":"\u00c9"}"#, #"{"k":1,"k":2}"#,
        " \n\t{ \"x\" : [ 1 , 2.5 , \"y\" ] , \"z\" : { } } \r\n",
        #"[1e3, 1000, 1000.0, 10e2]"#, #"[-0, 0, 0.0, -0.0e0]"#,
    ]

    @Test("append(json:) gives exactly encode(JSONParser.parse(json))", arguments: [CollationMode.unicode, .raw])
    func fromJSONText(mode: CollationMode) throws {
        for text in Self.jsonInputs {
            let expected = CollationKey.encode(try JSONParser.parse(text), mode: mode)
            #expect(try CollationKey.encode(json: text, mode: mode) == expected, "\(text)")
            // Appending after existing bytes leaves them alone.
            var out: [UInt8] = [9, 9]
            var text = text
            try text.withUTF8 { try CollationKey.append(json: UnsafeRawBufferPointer($0), mode: mode, to: &out) }
            #expect(out == [9, 9] + expected, "\(text)")
        }
        #expect(try CollationKey.encode(json: "1e3", mode: mode) == CollationKey.encode(1000, mode: mode))
        #expect(try CollationKey.encode(json: #""\u00e9""#, mode: mode) == CollationKey.encode("é", mode: mode))
        #expect(try CollationKey.encode(json: #""\ud83d\ude00""#, mode: mode) == CollationKey.encode("😀", mode: mode))
    }

    @Test("append(json:) rejects what the parser rejects and leaves the output as it was")
    func invalidJSON() {
        let invalid = [
            "", " ", "[", "[1,", "[1,]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{1:2}", "nul", "tru", "01", "1.", "-",
            "1e", "\"abc", "\"\\x\"", "\"\\u12\"", "[1 2]", "1 2", "\u{1}", "[\"\u{1}\"]", "1e400", "{\"a\":1]", "[}",
        ]
        for text in invalid {
            var out: [UInt8] = [7]
            var text = text
            let parserError = #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
            let error = #expect(throws: JSONParseError.self, "\(text)") {
                try text.withUTF8 { try CollationKey.append(json: UnsafeRawBufferPointer($0), mode: .unicode, to: &out) }
            }
            #expect(error == parserError, "\(text)")
            #expect(out == [7])
        }
        // Invalid UTF-8 inside a string.
        let bytes: [UInt8] = [0x22, 0xC3, 0x28, 0x22]
        #expect(throws: JSONParseError.self) {
            try bytes.withUnsafeBytes { try CollationKey.encode(json: $0, mode: .raw) }
        }
    }

    @Test("Nesting is limited to the parser's 1000 levels, without recursion")
    func depth() throws {
        let ok = String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)
        let key = try CollationKey.encode(json: ok, mode: .unicode)
        #expect(key.count == 2000)
        #expect(key == CollationKey.encode(try JSONParser.parse(ok), mode: .unicode))
        let tooDeep = String(repeating: "[", count: 1001) + String(repeating: "]", count: 1001)
        #expect(throws: JSONParseError.self) { try CollationKey.encode(json: tooDeep, mode: .unicode) }
        let objects = String(repeating: #"{"a":"#, count: 1001) + "1" + String(repeating: "}", count: 1001)
        #expect(throws: JSONParseError.self) { try CollationKey.encode(json: objects, mode: .raw) }
        // A huge unclosed input fails on depth, not the stack.
        #expect(throws: JSONParseError.self) { try CollationKey.encode(json: String(repeating: "[", count: 1_000_000), mode: .unicode) }

        // Deep trees encode and compare iteratively.
        var deep: JSONValue = "x"
        var deeper: JSONValue = "y"
        for _ in 0..<1000 {
            deep = [deep]
            deeper = [deeper]
        }
        #expect(CollationKey.compare(deep, deeper, mode: .unicode) == -1)
        #expect(CollationKey.compare(deep, deep, mode: .unicode) == 0)
        #expect(Self.memcmp(CollationKey.encode(deep, mode: .unicode), CollationKey.encode(deeper, mode: .unicode)) == -1)
    }

    // MARK: Property test

    @Test("Random values: memcmp of encodings matches the comparator", arguments: [CollationMode.unicode, .raw])
    func randomized(mode: CollationMode) throws {
        var generator = SplitMix64(seed: mode == .unicode ? 20250314 : 19700101)
        let values = (0..<2000).map { _ in CollationRandomJSON.value(using: &generator, depth: 0) }
        let keys = values.map { CollationKey.encode($0, mode: mode) }
        var equalPairs = 0
        func check(_ i: Int, _ j: Int) {
            let expected = CollationKey.compare(values[i], values[j], mode: mode)
            let actual = Self.memcmp(keys[i], keys[j])
            if expected == 0 { equalPairs += 1 }
            #expect(actual == expected, "\(Self.describe(values[i])) vs \(Self.describe(values[j]))")
        }
        for i in values.indices {
            check(i, (i + 1) % values.count)
            for _ in 0..<10 { check(i, Int.random(in: 0..<values.count, using: &generator)) }
        }
        // Neighbours after sorting are the close calls.
        let sorted = values.indices.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
        for (i, j) in zip(sorted, sorted.dropFirst()) {
            check(i, j)
            #expect(CollationKey.compare(values[i], values[j], mode: mode) <= 0)
        }
        #expect(equalPairs > 0, "the generator should produce some collation-equal pairs")
        // And straight from the JSON text.
        for (value, key) in zip(values, keys).prefix(500) {
            #expect(try CollationKey.encode(json: JSONWriter.string(value), mode: mode) == key)
        }
        // Every random array can be cut at every level.
        for value in values.prefix(500) {
            guard case .array(let elements) = value else { continue }
            let key = CollationKey.encode(value, mode: mode)
            for level in 0...(elements.count + 1) {
                let expected = CollationKey.encode(.array(Array(elements.prefix(level))), mode: mode)
                #expect(CollationKey.prefix(ofEncodedArray: key, level: level) == expected)
            }
        }
    }

    // MARK: Group level

    @Test("prefix cuts an encoded array at element boundaries", arguments: [CollationMode.unicode, .raw])
    func groupPrefix(mode: CollationMode) {
        func key(_ value: JSONValue) -> [UInt8] { CollationKey.encode(value, mode: mode) }
        let abc = key(["a", "b", "c"])
        #expect(CollationKey.prefix(ofEncodedArray: abc, level: 2) == key(["a", "b"]))
        #expect(CollationKey.prefix(ofEncodedArray: abc, level: 1) == key(["a"]))
        // Level 0 is the empty array (CouchDB's group_level=0 is "one row, key null": the caller's business).
        #expect(CollationKey.prefix(ofEncodedArray: abc, level: 0) == key([]))
        #expect(CollationKey.prefix(ofEncodedArray: abc, level: 3) == abc)
        #expect(CollationKey.prefix(ofEncodedArray: abc, level: 10) == abc)
        // Non-arrays are unchanged.
        for value: JSONValue in [nil, true, 0, 12.5, "abc", ["a": ["b", "c"]], []] {
            #expect(CollationKey.prefix(ofEncodedArray: key(value), level: 1) == key(value))
        }
        // Elements of every kind, including numbers whose bytes contain 0x00 and nested containers.
        let mixed: JSONValue = [0, ["x", ["k": [1, 2, [:]]]], "", nil, false, true, -1, ["": []], "\u{0}\u{1}", []]
        guard case .array(let elements) = mixed else { return }
        let mixedKey = key(mixed)
        for level in 0...elements.count {
            #expect(CollationKey.prefix(ofEncodedArray: mixedKey, level: level) == key(.array(Array(elements.prefix(level)))))
            let end = mixedKey.withUnsafeBytes { CollationKey.elementsEnd(inEncodedArray: $0, level: level) }
            #expect((end == nil) == (level >= elements.count))
        }
        // Grouped keys keep the order of the full keys.
        let rows: [JSONValue] = [["a", 1], ["a", 2], ["b", 1], ["b", 1, "x"], ["B", 0]]
        let grouped = rows.map { CollationKey.prefix(ofEncodedArray: key($0), level: 1) }
        #expect(grouped == rows.map { row in key([row[0]!]) })
    }

    @Test("No encoding starts with 0xFF, the above-everything byte")
    func maximum() {
        for value in Self.couchDBOrder {
            #expect(Self.memcmp(CollationKey.encode(value, mode: .unicode), [CollationKey.maximumByte]) == -1)
        }
        for value in Self.rawOrder {
            #expect(Self.memcmp(CollationKey.encode(value, mode: .raw), [CollationKey.maximumByte]) == -1)
        }
    }

    // MARK: Speed (informative)

    @Test("append(json:) speed on a typical key (informative)")
    func speed() throws {
        var text = #"["cust-123","2025-03-14"]"#
        var out: [UInt8] = []
        out.reserveCapacity(256)
        let iterations = 20_000
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            try text.withUTF8 { utf8 in
                let bytes = UnsafeRawBufferPointer(utf8)
                for _ in 0..<iterations {
                    out.removeAll(keepingCapacity: true)
                    try CollationKey.append(json: bytes, mode: .unicode, to: &out)
                }
            }
        }
        let nanoseconds = Double(elapsed.components.attoseconds) / 1e9 + Double(elapsed.components.seconds) * 1e9
        print("CollationKey.append(json:) on \(text): \(Int(nanoseconds / Double(iterations))) ns/key (this build)")
        #expect(out == CollationKey.encode(["cust-123", "2025-03-14"], mode: .unicode))
    }
}

// MARK: - Random JSON


enum CollationRandomJSON {
    /// Pieces that exercise case, accents, ignorables, canonical equivalence,
    /// scripts, emoji, control characters and ICU-versus-bytes differences.
    static let pieces = [
        "a", "A", "b", "B", "z", "Z", "e", "é", "e\u{301}", "E", "É", "ß", "ss", "SS", "æ", "ae", "\u{200B}", "\u{200D}",
        "-", "_", " ", "~", "0", "1", "9", "10", "日", "本", "한", "ж", "Ж", "α", "😀", "𝔸", "\u{FFFF}", "\u{FFF0}",
        "\u{0}", "\u{1}", "\u{2}", "\n", "ǆ", "ǅ", "Ǆ", "ﬃ", "ffi", "ı", "İ", "i", "I",
    ]

    static let numbers: [Double] = [
        0, -0.0, 1, -1, 0.5, -0.5, 2, 10, 100, 1e21, -1e21, 1e-7, 3.14159, -2.5e-300, 1e300, 9007199254740994,
        1.7976931348623157e308, -1.7976931348623157e308, Double.leastNonzeroMagnitude,
    ]

    static func string(using generator: inout SplitMix64) -> String {
        let length = Int.random(in: 0...4, using: &generator)
        return (0..<length).map { _ in pieces.randomElement(using: &generator)! }.joined()
    }

    static func value(using generator: inout SplitMix64, depth: Int) -> JSONValue {
        let choice = Int.random(in: 0..<(depth >= 3 ? 8 : 12), using: &generator)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2, 3: return .number(numbers.randomElement(using: &generator)!)
        case 4: return .number(Double(Int.random(in: -5...5, using: &generator)) / 2)
        case 5, 6, 7: return .string(string(using: &generator))
        case 8, 9:
            let count = Int.random(in: 0...3, using: &generator)
            return .array((0..<count).map { _ in value(using: &generator, depth: depth + 1) })
        default:
            let count = Int.random(in: 0...3, using: &generator)
            return .object((0..<count).map { _ in
                (key: string(using: &generator), value: value(using: &generator, depth: depth + 1))
            })
        }
    }
}
