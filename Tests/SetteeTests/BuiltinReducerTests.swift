import Testing
import SetteeViews
import SetteeCore
@testable import Settee


private func json(_ text: String) -> JSONValue {
    try! JSONValue(parsing: text)
}

/// Reduces `values` with `reducer` (keys are irrelevant except for _approx_count_distinct).
private func reduce(_ reducer: BuiltinReducer, _ values: [JSONValue]) -> JSONValue {
    reducer.reduce(keys: Array(repeating: .null, count: values.count), values: values)
}

private func stats(_ sum: Double, _ count: Double, _ min: Double, _ max: Double, _ sumsqr: Double) -> JSONValue {
    ["sum": .number(sum), "count": .number(count), "min": .number(min), "max": .number(max), "sumsqr": .number(sumsqr)]
}

private let statPrefix = "The _stats function requires that map values be numbers or arrays of numbers, not '"

@Suite("BuiltinReducer")
struct BuiltinReducerTests {
    // MARK: Definitions

    @Test("prefix matching of reduce sources", arguments: [
        ("_sum", BuiltinReducer.sum), ("_sum\n", .sum), ("_summary", .sum), ("_count", .count),
        ("_count // comment", .count), ("_stats", .stats), ("_stats\n\n", .stats),
        ("_approx_count_distinct", .approximateCountDistinct), ("_approx_count_distinct ", .approximateCountDistinct),
    ])
    func prefixMatching(source: String, expected: BuiltinReducer) throws {
        #expect(try BuiltinReducer(source: source) == expected)
    }

    @Test("sources not starting with an underscore are JavaScript", arguments: [
        "function(keys, values) { return sum(values); }", " _sum", "\n_count", "", "sum",
    ])
    func javaScriptSources(source: String) throws {
        #expect(try BuiltinReducer(source: source) == nil)
    }

    @Test("unknown built-ins fail with CouchDB's message", arguments: [
        "_frob", "_COUNT", "_", "_su", "_top", "_fir", "_approx_count", "_frob\n// x",
    ])
    func unknownBuiltin(source: String) {
        #expect(throws: ReduceDefinitionError(reason: "`\(source)` is not a supported reduce function.")) {
            try BuiltinReducer(source: source)
        }
    }

    // MARK: _count

    @Test("_count counts rows and sums counts on rereduce")
    func count() {
        #expect(reduce(.count, []) == 0)
        #expect(reduce(.count, [1, "x", nil, [1], ["a": 1]]) == 5)
        #expect(BuiltinReducer.count.rereduce([3, 4, 0, 10]) == 17)
        #expect(BuiltinReducer.count.rereduce([]) == 0)
        #expect(BuiltinReducer.count.finalValue(17) == 17)
    }

    // MARK: _sum

    @Test("_sum tables", arguments: [
        // numbers
        ("[]", "0"),
        ("[1,2,3]", "6"),
        ("[1.5,2.25,-4]", "-0.25"),
        // arrays: element-wise, shorter padded, a bare number is a one-element array
        ("[[1,2],[1,2,3]]", "[2,4,3]"),
        ("[[1,2,3],[1]]", "[2,2,3]"),
        ("[2,[3,5,7],[0,0,0,42],1,3]", "[9,5,7,42]"),  // the docs' example, ungrouped
        ("[2,[3,5,7]]", "[5,5,7]"),  // grouped "abc"
        ("[[0,0,0,42]]", "[0,0,0,42]"),
        ("[[3,5,7],2]", "[5,5,7]"),
        ("[[]]", "[0]"),  // sum_arrays([0], [])
        ("[5,[]]", "[5]"),
        ("[[1,[2]]]", "[1,[2]]"),  // a single array's tail is not checked
        // objects: summed per key, recursively; sorted by key once two are merged
        (#"[{"b":1,"a":2}]"#, #"{"b":1,"a":2}"#),
        (#"[{"b":1,"a":2},{"c":1}]"#, #"{"a":2,"b":1,"c":1}"#),
        (#"[{"a":1},{"a":2},{"a":3}]"#, #"{"a":6}"#),
        (#"[{"a":{"b":1}},{"a":{"b":2,"c":[1]}}]"#, #"{"a":{"b":3,"c":[1]}}"#),
        (#"[{"a":1,"b":[1,2],"c":{"d":3},"g":1},{"a":2,"b":3,"c":{"e":5},"f":1,"g":1}]"#,
         #"{"a":3,"b":[4,2],"c":{"d":3,"e":5},"f":1,"g":2}"#),  // eunit sum_values_test
        (#"[{"a":2,"b":3,"c":{"e":5},"f":1,"g":1},{"a":1,"b":[1,2],"c":{"d":3},"g":1}]"#,
         #"{"a":3,"b":[4,2],"c":{"d":3,"e":5},"f":1,"g":2}"#),
        (#"[{"a":"x"}]"#, #"{"a":"x"}"#),  // a lone object is not checked
        (#"[{"a":"x"},{"b":1}]"#, #"{"a":"x","b":1}"#),  // nor are keys only one side has
        (#"[{"z":1,"é":1,"B":1,"a":1},{}]"#, #"{"B":1,"a":1,"z":1,"é":1}"#),  // byte order of keys
        (#"[{"a":1,"a":2},{"a":10}]"#, #"{"a":11,"a":2}"#),  // duplicate keys, as lists:sort and the merge treat them
        (#"[{"a":[1],"a":1},{"b":1}]"#, #"{"a":1,"a":[1],"b":1}"#),  // ties broken in Erlang term order
        (#"[0,{"a":1}]"#, #"{"a":1}"#),  // an accumulator of 0 takes the object as it is
    ])
    func sumTable(input: String, expected: String) {
        let result = reduce(.sum, json(input).arrayValue!)
        #expect(result == json(expected), "got \(result)")
        #expect(result.jsonText == json(expected).jsonText)
    }

    @Test("_sum error values, word for word", arguments: [
        (#"["a"]"#, #""a""#),
        ("[1,null]", "null"),
        ("[true]", "true"),
        (#"[["x"]]"#, "[0]"),  // the cause is the accumulator's remainder: sum_arrays([0], ["x"])
        (#"[[1,2],[1,"x"]]"#, "[2]"),
        (#"[[1,"x"],[1,2]]"#, #"["x"]"#),
        (#"[[{"a":1},{"a":2}]]"#, "[0]"),
        (#"[{"a":1},5]"#, "5"),  // object then number: the number is the cause
        (#"[{"a":1},[1]]"#, "[1]"),
        (#"[{"a":"x"},{"a":1}]"#, "1"),
        (#"[{"a":{"b":[1]}},{"a":{"b":["q"]}}]"#, "[1]"),
        (#"[1,2,"three",4]"#, #""three""#),
    ])
    func sumErrors(input: String, cause: String) {
        let expected = json(
            #"{"error":"builtin_reduce_error","reason":"The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided that the values for all fields are themselves numbers, arrays of numbers, or objects.","caused_by":"#
                + cause + "}"
        )
        let result = reduce(.sum, json(input).arrayValue!)
        #expect(result == expected, "got \(result)")
        #expect(result.jsonText == expected.jsonText)
        #expect(BuiltinReducer.sumErrorValue(causedBy: json(cause)) == expected)
    }

    @Test("_sum error values pass through reduce and rereduce unchanged")
    func sumErrorPropagation() {
        let error = BuiltinReducer.sumErrorValue(causedBy: "a")
        #expect(BuiltinReducer.sum.rereduce([5, error, 3]) == error)
        #expect(BuiltinReducer.sum.rereduce([error, [1, 2]]) == error)
        #expect(BuiltinReducer.sum.rereduce([["a": 1], error]) == error)
        #expect(BuiltinReducer.sum.rereduce([error]) == error)
        #expect(BuiltinReducer.sum.finalValue(error) == error)
        // An error value met as a map value is passed on too (eunit builtin_sum_rows_negative_test).
        let bare: JSONValue = ["error": "builtin_reduce_error"]
        #expect(reduce(.sum, [1, bare, 2]) == bare)
        // The reduce-limit error shape (no caused_by) is an error value as well.
        let overflow: JSONValue = ["error": "builtin_reduce_error", "reason": "Reduce output must shrink more rapidly"]
        #expect(BuiltinReducer.sum.rereduce([overflow, 1]) == overflow)
        // Split inputs: the error partial wins whatever the other partials are.
        let values: [JSONValue] = [1, 2, "bad", 4, 5]
        let partials = [reduce(.sum, Array(values[0..<2])), reduce(.sum, Array(values[2..<4])), reduce(.sum, [values[4]])]
        #expect(BuiltinReducer.sum.rereduce(partials) == BuiltinReducer.sumErrorValue(causedBy: "bad"))
        #expect(reduce(.sum, values) == BuiltinReducer.sumErrorValue(causedBy: "bad"))
    }

    @Test("_sum mixes that crash CouchDB's reducer fail the reduce", arguments: [
        (#"[5,{"a":1}]"#, "5"),  // case Acc of 0 / {AccProps}: no clause for 5
        (#"[[1],{"a":1}]"#, "[1]"),
        (#"[{"a":5},{"a":{"b":1}}]"#, "5"),
        (#"[{"error":"x"}]"#, #"{<<"error">>,<<"x">>}"#),  // keyfind finds an "error" that is not ours
        (#"[{"error":null}]"#, #"{<<"error">>,null}"#),
    ])
    func sumFailures(input: String, reason: String) {
        let failure = BuiltinReduceFailure(error: "case_clause", reason: reason)
        let values = json(input).arrayValue!
        #expect(throws: failure) { try BuiltinReducer.sum.checkedReduce(keys: values, values: values) }
        #expect(reduce(.sum, values) == failure.jsonValue)
        #expect(failure.jsonValue == ["error": "case_clause", "reason": .string(reason)])
    }

    // MARK: _stats

    @Test("_stats tables", arguments: [
        ("[]", "{\"sum\":0,\"count\":0,\"min\":0,\"max\":0,\"sumsqr\":0}"),
        ("[2]", "{\"sum\":2,\"count\":1,\"min\":2,\"max\":2,\"sumsqr\":4}"),
        ("[1,2,3,4]", "{\"sum\":10,\"count\":4,\"min\":1,\"max\":4,\"sumsqr\":30}"),
        ("[-1.5,0.5]", "{\"sum\":-1,\"count\":2,\"min\":-1.5,\"max\":0.5,\"sumsqr\":2.5}"),
        // arrays: stats per element
        ("[[1,2]]", #"[{"sum":1,"count":1,"min":1,"max":1,"sumsqr":1},{"sum":2,"count":1,"min":2,"max":2,"sumsqr":4}]"#),
        ("[[2,3,5],[7,11,13]]",  // eunit stat_values_test
         #"[{"sum":9,"count":2,"min":2,"max":7,"sumsqr":53},{"sum":14,"count":2,"min":3,"max":11,"sumsqr":130},{"sum":18,"count":2,"min":5,"max":13,"sumsqr":194}]"#),
        ("[[[1],2],[[3],4]]",
         #"[[{"sum":4,"count":2,"min":1,"max":3,"sumsqr":10}],{"sum":6,"count":2,"min":2,"max":4,"sumsqr":20}]"#),
        ("[[]]", "[]"),
        // pre-aggregated objects, mixed with numbers; other keys are ignored
        (#"[{"sum":2,"count":1,"min":2,"max":2,"sumsqr":4},3]"#, "{\"sum\":5,\"count\":2,\"min\":2,\"max\":3,\"sumsqr\":13}"),
        (#"[3,{"max":2,"note":"x","sum":2,"count":1,"min":2,"sumsqr":4}]"#, "{\"sum\":5,\"count\":2,\"min\":2,\"max\":3,\"sumsqr\":13}"),
        (#"[{"sum":10,"count":4,"min":1,"max":4,"sumsqr":30},{"sum":5,"count":1,"min":5,"max":5,"sumsqr":25}]"#,
         "{\"sum\":15,\"count\":5,\"min\":1,\"max\":5,\"sumsqr\":55}"),
        (#"[[1,{"sum":2,"count":1,"min":2,"max":2,"sumsqr":4}],[3,4]]"#,
         #"[{"sum":4,"count":2,"min":1,"max":3,"sumsqr":10},{"sum":6,"count":2,"min":2,"max":4,"sumsqr":20}]"#),
    ])
    func statsTable(input: String, expected: String) {
        let result = reduce(.stats, json(input).arrayValue!)
        #expect(result == json(expected), "got \(result)")
        #expect(BuiltinReducer.stats.finalValue(result) == result)
    }

    @Test("_stats input errors fail the reduce with CouchDB's messages, word for word", arguments: [
        (#"["a"]"#, "non-numeric _stats input: <<97>>"),
        ("[null]", "non-numeric _stats input: null"),
        ("[true]", "non-numeric _stats input: true"),
        (#"[["a"]]"#, "non-numeric _stats input: <<97>>"),
        (#"[1,"a"]"#, statPrefix + #"<<"a">>'"#),
        ("[1,null]", statPrefix + "null'"),
        ("[1,false]", statPrefix + "false'"),
        (#"[1,"say \"hi\"\n"]"#, statPrefix + #"<<"say \"hi\"\n">>'"#),
        ("[1,\"\\u0001\"]", statPrefix + "<<1>>'"),
        // ~p starts past column 80, so io_lib_pretty breaks every list and tuple.
        ("[1,[1,2]]", statPrefix + "[1,\n" + String(repeating: " ", count: statPrefix.count + 1) + "2]'"),
        ("[[1,2],3]", statPrefix + "{3,\n" + ["1", "3", "3", "9}"].map { String(repeating: " ", count: statPrefix.count + 1) + $0 }
            .joined(separator: ",\n") + "'"),
        ("[[1.5],2.5]", statPrefix + "{2.5,\n" + ["1", "2.5", "2.5", "6.25}"]
            .map { String(repeating: " ", count: statPrefix.count + 1) + $0 }.joined(separator: ",\n") + "'"),
        (#"[1,"€"]"#, statPrefix + "<<226,130,\n" + String(repeating: " ", count: statPrefix.count + 2) + "172>>'"),
        (#"[{"sum":1}]"#, #"user _stats input missing required field count ([{<<"sum">>,1}])"#),
        (#"[1,{"count":1}]"#, #"user _stats input missing required field sum ([{<<"count">>,1}])"#),
        (#"[{"sum":1,"count":1,"min":1,"max":1}]"#,
         #"user _stats input missing required field sumsqr ([{<<"sum">>,1},"# + "\n"
            + String(repeating: " ", count: 50) + #"{<<"count">>,1},"# + "\n"
            + String(repeating: " ", count: 50) + #"{<<"min">>,1},"# + "\n"
            + String(repeating: " ", count: 50) + #"{<<"max">>,1}])"#),
        (#"[{"sum":"x","count":1,"min":1,"max":1,"sumsqr":1}]"#, "non-numeric _stats input received for sum: <<120>>"),
        (#"[2,{"sum":1,"count":1,"min":1,"max":1,"sumsqr":null}]"#, "non-numeric _stats input received for sumsqr: null"),
        (#"[{"sum":[1,2],"count":1}]"#, "non-numeric _stats input received for sum: [1,2]"),
        (#"[{"sum":{"a":1.5},"count":1}]"#, "non-numeric _stats input received for sum: {[{<<97>>,1.5}]}"),
    ])
    func statsErrors(input: String, reason: String) {
        let failure = BuiltinReduceFailure(error: "invalid_value", reason: reason)
        let values = json(input).arrayValue!
        #expect(throws: failure) { try BuiltinReducer.stats.checkedReduce(keys: values, values: values) }
        #expect(reduce(.stats, values) == failure.jsonValue)
    }

    @Test("_stats over arrays of different lengths fails the reduce")
    func statsArrayLengths() {
        #expect(throws: BuiltinReduceFailure.self) { try BuiltinReducer.stats.checkedReduce(keys: [], values: [[1, 2], [1]]) }
        #expect(throws: BuiltinReduceFailure.self) { try BuiltinReducer.stats.checkedReduce(keys: [], values: [[1], [1, 2]]) }
        let result = reduce(.stats, [[1, 2], [1]])
        #expect(result["error"] == "function_clause")
    }

    @Test("_stats rereduce combines packed partials")
    func statsRereduce() {
        let a = reduce(.stats, [1, 2])
        let b = reduce(.stats, [3, 4])
        #expect(BuiltinReducer.stats.rereduce([a, b]) == stats(10, 4, 1, 4, 30))
        #expect(BuiltinReducer.stats.rereduce([a]) == a)
        #expect(BuiltinReducer.stats.rereduce([]) == stats(0, 0, 0, 0, 0))
        let arrays = BuiltinReducer.stats.rereduce([reduce(.stats, [[1, 10]]), reduce(.stats, [[2, 20]])])
        #expect(arrays == [stats(3, 2, 1, 2, 5), stats(30, 2, 10, 20, 500)])
    }

    // MARK: Erlang formatting

    @Test("floats print as io_lib_format:fwrite_g does", arguments: [
        (1.5, "1.5"), (3.0, "3.0"), (10.0, "10.0"), (100.0, "100.0"), (120.0, "120.0"), (1000.0, "1.0e3"),
        (1200.0, "1.2e3"), (0.1, "0.1"), (0.001, "0.001"), (0.0001, "1.0e-4"), (-2.5, "-2.5"),
        (123456.789, "123456.789"), (1e21, "1.0e21"), (1.0e16, "1.0e16"), (1.5e300, "1.5e300"), (5e-324, "5.0e-324"),
        (0.0, "0.0"), (-0.0, "-0.0"), (6.25, "6.25"),
    ])
    func floatFormatting(value: Double, expected: String) {
        #expect(String(decoding: ErlangFormat.floatText(value), as: UTF8.self) == expected)
    }

    @Test("~p and ~w of short terms")
    func termFormatting() {
        let term = ErlangTerm(json(#"[1,2.5,"ab",null,{"k":[true]},[],{}]"#))
        #expect(String(decoding: ErlangFormat.write(term), as: UTF8.self)
            == #"[1,2.5,<<97,98>>,null,{[{<<107>>,[true]}]},[],{[]}]"#)
        #expect(String(decoding: ErlangFormat.print(term, column: 1), as: UTF8.self)
            == #"[1,2.5,<<"ab">>,null,{[{<<"k">>,[true]}]},[],{[]}]"#)
        // A list of printable character codes is a string to ~p.
        #expect(String(decoding: ErlangFormat.print(ErlangTerm(json("[72,105]")), column: 1), as: UTF8.self) == #""Hi""#)
        #expect(String(decoding: ErlangFormat.write(ErlangTerm(json("[72,105]"))), as: UTF8.self) == "[72,105]")
        #expect(String(decoding: ErlangFormat.write(ErlangTerm(json("1e21"))), as: UTF8.self) == "1.0e21")
    }

    // MARK: Rereduce equals reduce

    private static func randomValue(_ kind: Int, _ rng: inout SplitMix64) -> JSONValue {
        func number() -> JSONValue { .number(Double(Int.random(in: -1000...1000, using: &rng))) }
        switch kind {
        case 0:
            return number()
        case 1:  // numbers and arrays of numbers of any length
            if Bool.random(using: &rng) { return number() }
            return .array((0..<Int.random(in: 0...5, using: &rng)).map { _ in number() })
        default:  // objects, nested, with numbers or arrays of numbers at the leaves
            func object(depth: Int) -> JSONValue {
                var members: [(key: String, value: JSONValue)] = []
                for key in ["a", "b", "c", "d"].shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng)) {
                    if key == "d" {
                        if depth < 2 { members.append((key: key, value: object(depth: depth + 1))) }
                    } else if key == "c" {
                        members.append((key: key, value: .array((0..<Int.random(in: 1...3, using: &rng)).map { _ in number() })))
                    } else {
                        members.append((key: key, value: number()))
                    }
                }
                return .object(members)
            }
            return object(depth: 0)
        }
    }

    private static func randomStatsValue(_ kind: Int, _ rng: inout SplitMix64) -> JSONValue {
        func number() -> Double { Double(Int.random(in: -100...100, using: &rng)) }
        func scalar() -> JSONValue {
            if Int.random(in: 0..<4, using: &rng) > 0 { return .number(number()) }
            let values = (0..<Int.random(in: 1...4, using: &rng)).map { _ in number() }
            return stats(values.reduce(0, +), Double(values.count), values.min()!, values.max()!, values.reduce(0) { $0 + $1 * $1 })
        }
        return kind == 0 ? scalar() : .array([scalar(), scalar(), scalar()])
    }

    /// Cuts `values` into random consecutive chunks of at least `minimum` elements (the last may be shorter).
    private static func randomChunks<T>(_ values: [T], minimum: Int = 1, _ rng: inout SplitMix64) -> [[T]] {
        var chunks: [[T]] = []
        var start = 0
        while start < values.count {
            let length = Int.random(in: minimum...max(minimum, values.count / 2), using: &rng)
            chunks.append(Array(values[start..<min(values.count, start + length)]))
            start += length
        }
        return chunks
    }

    /// Reduces random chunks, then rereduces the partials in random groups until one is left.
    private static func reduceInPieces(_ reducer: BuiltinReducer, keys: [JSONValue], values: [JSONValue], _ rng: inout SplitMix64) -> JSONValue {
        var partials = randomChunks(Array(zip(keys, values)), &rng).map { chunk in
            reducer.reduce(keys: chunk.map(\.0), values: chunk.map(\.1))
        }
        while partials.count > 1 {
            partials = randomChunks(partials, minimum: 2, &rng).map { reducer.rereduce($0) }
        }
        return reducer.rereduce(partials)
    }

    @Test("rereduce of random splits equals reduce of the whole", arguments: [BuiltinReducer.count, .sum, .stats])
    func rereduceEqualsReduce(reducer: BuiltinReducer) {
        var rng = SplitMix64(seed: 0x5E77EE + UInt64(reducer.name.utf8.count))
        for trial in 0..<300 {
            let kind = trial % 3
            let count = Int.random(in: 1...40, using: &rng)
            let values = (0..<count).map { _ in
                reducer == .stats ? Self.randomStatsValue(kind % 2, &rng) : Self.randomValue(kind, &rng)
            }
            let keys = values.indices.map { JSONValue.number(Double($0)) }
            let whole = reducer.reduce(keys: keys, values: values)
            #expect(whole["error"] == nil, "input \(values) gave \(whole)")
            let pieces = Self.reduceInPieces(reducer, keys: keys, values: values, &rng)
            #expect(pieces == whole, "input \(values)")
            #expect(reducer.finalValue(pieces) == reducer.finalValue(whole))
        }
    }

    // MARK: _approx_count_distinct

    @Test("xxHash64 test vectors", arguments: [
        ("", 0xEF46_DB37_51D8_E999 as UInt64), ("a", 0xD24E_C4F1_A98C_6E5B), ("abc", 0x44BC_2CF5_AD77_0999),
        ("Nobody inspects the spammish repetition", 0xFBCE_A83C_8A37_8BF1),
        ("0123456789abcdef0123456789abcdef0123456789abcdefXYZ", 0x2068_B5BE_32B6_D8DC),
        (#""hello""#, 0xB0F7_1110_20CE_8DEB), ("[1,2,3]", 0xF9C8_4243_83E1_C6F1),
    ])
    func xxHash64(input: String, expected: UInt64) {
        #expect(XXHash64.hash(Array(input.utf8)) == expected)
    }

    private static func distinctKeys(_ count: Int, offset: Int = 0) -> [JSONValue] {
        (offset..<(offset + count)).map { i in
            switch i % 3 {
            case 0: return .string("key-\(i)")
            case 1: return .number(Double(i))
            default: return [.string("user"), .number(Double(i))]
            }
        }
    }

    private static func estimate(_ keys: [JSONValue]) -> Double {
        let reducer = BuiltinReducer.approximateCountDistinct
        return reducer.finalValue(reducer.reduce(keys: keys, values: keys.map { _ in .null })).doubleValue!
    }

    @Test("_approx_count_distinct is near exact for small counts")
    func approximateSmall() {
        #expect(Self.estimate([]) == 0)
        #expect(Self.estimate(["only"]) == 1)
        for n in [2, 3, 5, 10, 20, 50, 75, 100] {
            let estimate = Self.estimate(Self.distinctKeys(n))
            #expect(abs(estimate - Double(n)) <= max(1, Double(n) * 0.02), "n = \(n): \(estimate)")
        }
    }

    @Test("_approx_count_distinct is within 3% for large counts", arguments: [1_000, 10_000, 100_000])
    func approximateLarge(n: Int) {
        let estimate = Self.estimate(Self.distinctKeys(n))
        #expect(abs(estimate - Double(n)) / Double(n) < 0.03, "n = \(n): \(estimate)")
    }

    @Test("_approx_count_distinct counts keys, not values or duplicates")
    func approximateDuplicates() {
        let reducer = BuiltinReducer.approximateCountDistinct
        let keys = Self.distinctKeys(500)
        let once = reducer.reduce(keys: keys, values: keys.map { _ in 1 })
        let thrice = reducer.reduce(keys: keys + keys.reversed() + keys, values: (0..<1500).map { .number(Double($0)) })
        #expect(once == thrice)
        #expect(reducer.finalValue(once) == reducer.finalValue(thrice))
        // Keys equal as JSON text count once; different JSON counts twice.
        #expect(Self.estimate([1, 1.0, 1, ["a": 1], ["a": 1]]) == 2)
        #expect(Self.estimate(["a", ["a"], 1, "1", nil, "null"]) == 6)
    }

    @Test("_approx_count_distinct rereduce of split inputs equals reducing everything at once")
    func approximateRereduce() {
        let reducer = BuiltinReducer.approximateCountDistinct
        var rng = SplitMix64(seed: 42)
        for n in [0, 1, 7, 300, 700, 5_000] {
            let keys = Self.distinctKeys(n) + Self.distinctKeys(n / 3)  // with duplicates
            let whole = reducer.reduce(keys: keys, values: keys)
            let pieces = n == 0 ? reducer.rereduce([whole, whole]) : Self.reduceInPieces(reducer, keys: keys, values: keys, &rng)
            #expect(pieces == whole, "n = \(n)")
            #expect(reducer.rereduce([whole]) == whole)
        }
        // Union of disjoint sets.
        let a = reducer.reduce(keys: Self.distinctKeys(2_000), values: [])
        let b = reducer.reduce(keys: Self.distinctKeys(2_000, offset: 2_000), values: [])
        let union = reducer.finalValue(reducer.rereduce([a, b])).doubleValue!
        #expect(abs(union - 4_000) / 4_000 < 0.03, "\(union)")
    }

    @Test("_approx_count_distinct partials: sparse and dense forms round-trip")
    func approximateEncoding() throws {
        var small = HyperLogLog()
        for key in Self.distinctKeys(100) { small.insert(key) }
        #expect(small.encoded.hasPrefix("hll11s:"))
        #expect(small.encoded.utf8.count <= 7 + 100 * 4)
        #expect(HyperLogLog(encoded: small.encoded) == small)
        var large = HyperLogLog()
        for key in Self.distinctKeys(20_000) { large.insert(key) }
        #expect(large.encoded.hasPrefix("hll11d:"))
        #expect(large.encoded.utf8.count == 7 + 2048)
        #expect(HyperLogLog(encoded: large.encoded) == large)
        #expect(HyperLogLog().encoded == "hll11s:")
        #expect(HyperLogLog(encoded: "hll11s:") == HyperLogLog())
        for bad in ["", "hll11s:A", "hll11d:AAAA", "hll11x:", "hll11s:!!!!", "hll11s:////"] {
            #expect(HyperLogLog(encoded: bad) == nil, "\(bad)")
        }
        let reducer = BuiltinReducer.approximateCountDistinct
        #expect(throws: BuiltinReduceFailure.self) { try reducer.checkedFinalValue(17) }
        #expect(throws: BuiltinReduceFailure.self) { try reducer.checkedRereduce([.string(small.encoded), "nope"]) }
        #expect(reducer.finalValue("nope")["error"] == "badmatch")
    }
}
