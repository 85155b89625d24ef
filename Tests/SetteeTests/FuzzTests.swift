import Foundation
import Testing
import SetteeCore
import SetteeJavaScript
import SetteeStorage
@testable import Settee

/// How long each fuzz loop runs: `SETTEE_FUZZ_SECONDS`, else one second.
private let fuzzDuration = Duration.seconds(Double(ProcessInfo.processInfo.environment["SETTEE_FUZZ_SECONDS"] ?? "") ?? 1)
/// `SETTEE_FUZZ_SEED` replays a printed seed.
private let fuzzSeed = UInt64(ProcessInfo.processInfo.environment["SETTEE_FUZZ_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)

/// Runs `body` with fresh randomness until the time is up; returns the iterations.
private func fuzz(_ name: String, _ body: (inout SplitMix64) throws -> Void) rethrows -> Int {
    var generator = SplitMix64(seed: fuzzSeed)
    let deadline = ContinuousClock.now + fuzzDuration
    var iterations = 0
    while ContinuousClock.now < deadline {
        try body(&generator)
        iterations += 1
    }
    print("fuzz \(name): \(iterations) inputs, SETTEE_FUZZ_SEED=\(fuzzSeed)")
    return iterations
}

/// Documents to start from: each feature of JSON the parser has a path for.
private let documentCorpus = [
    #"{"_id": "a", "n": 1, "s": "text", "b": true, "z": null}"#,
    #"{"nested": {"a": [1, 2, {"b": [[], {}]}]}, "e": -0.0, "big": 1.7976931348623157e308, "small": 5e-324}"#,
    #"{"esc": "\"\\\/\b\f\n\r\t\u0000\u00e9\ud83d\ude00\ud800", "utf8": "é日😀", "k": "k", "k": "dup"}"#,
    #"{"_id": "_design/x", "views": {"v": {"map": "function (doc) { emit(doc._id, 1); }"}}}"#,
    #"[1, "two", 3.5e10, false]"#,
    #"{"_rev": "1-abc", "_deleted": true, "n": 123456789012345678901234567890}"#,
    "  {\n\t\"ws\" :\r\n [ 1 , 2 ] }  ",
]

/// Bytes that sit on the parser's decision points.
private let interestingBytes: [UInt8] = Array(#"{}[]":,\-+.0123456789eEtfnu"#.utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF, 0x20, 0x0A]

private func mutate(_ input: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
    var bytes = input
    for _ in 0..<Int.random(in: 1...4, using: &generator) {
        let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
        switch Int.random(in: 0..<7, using: &generator) {
        case 0 where !bytes.isEmpty: bytes[position] = UInt8.random(in: 0...255, using: &generator)
        case 1 where !bytes.isEmpty: bytes[position] = interestingBytes.randomElement(using: &generator)!
        case 2: bytes.insert(interestingBytes.randomElement(using: &generator)!, at: position)
        case 3 where !bytes.isEmpty: bytes.remove(at: position)
        case 4: bytes = Array(bytes.prefix(position))
        case 5 where !bytes.isEmpty:
            // Repeat a slice: deeper nesting, longer strings.
            let end = min(bytes.count, position + Int.random(in: 1...16, using: &generator))
            let slice = bytes[position..<end]
            bytes.insert(contentsOf: Array(repeating: Array(slice), count: Int.random(in: 1...64, using: &generator)).joined(), at: position)
        default:
            let other = Array(documentCorpus.randomElement(using: &generator)!.utf8)
            bytes.insert(contentsOf: other.prefix(Int.random(in: 0...other.count, using: &generator)), at: position)
        }
    }
    return bytes
}

@Suite("Fuzzing", .ownThread)
struct FuzzTests {
    @Test("The document parser, on mutated documents: a value that round-trips, or an error inside the input; never a crash")
    func documentParser() throws {
        let worker = try JavaScriptWorker()
        var accepted = 0
        let iterations = try fuzz("document parser") { generator in
            let bytes = mutate(Array(documentCorpus.randomElement(using: &generator)!.utf8), using: &generator)
            let parsed: JSONValue
            switch Result(catching: { () throws(JSONParseError) in try JSONParser.parse(bytes) }) {
            case .success(let value):
                parsed = value
            case .failure(let error):
                #expect(error.offset >= 0 && error.offset <= bytes.count, "\(error) for \(bytes)")
                #expect(throws: JSONParseError.self) { try bytes.withUnsafeBytes { _ = try CollationKey.encode(json: $0, mode: .unicode) } }
                #expect(throws: DocumentError.self) { try bytes.withUnsafeBytes { _ = try DocumentEdit(json: $0) } }
                return
            }
            accepted += 1
            // Written with the numbers as read (an integer past 2^53 is not its double).
            #expect(try JSONParser.parse(JSONWriter.string(parsed, literals: true)) == parsed)
            #expect(try bytes.withUnsafeBytes { try CollationKey.encode(json: $0, mode: .unicode) } == CollationKey.encode(parsed, mode: .unicode))
            let edit = Result { try bytes.withUnsafeBytes { try DocumentEdit(json: $0) } }
            if case .failure(let error) = edit { #expect(error is DocumentError) }
            // What Settee accepts as a document, the engine must accept too, or
            // the document could never be indexed.
            if case .object = parsed, case .success = edit {
                let rows = try worker.run { context in
                    let function = try context.compile("function (doc) { emit(null, doc); }")
                    return try context.map(String(decoding: bytes, as: UTF8.self), functions: [function]).outcomes[0].get()
                }
                #expect(rows.count == 1)
                #expect(throws: Never.self) { try JSONParser.parse(rows[0].value) }
            }
        }
        #expect(accepted > 0 && accepted < iterations, "the mutations should give both valid and invalid documents")
    }

    static let parameterNames = [
        "key", "keys", "startkey", "start_key", "endkey", "end_key", "startkey_docid", "endkey_docid", "inclusive_end",
        "descending", "limit", "skip", "group", "group_level", "reduce", "include_docs", "conflicts", "update_seq",
        "update", "stale", "stable", "sorted", "partition", "attachments", "unknown", "",
    ]
    static let parameterValues = [
        "true", "false", "0", "1", "-1", "10", "576460752303423487", "576460752303423488", "99999999999999999999", "1.5",
        "1e3", "", " ", "null", #""a""#, #""z""#, "[1,2]", "[]", "[1]", "{}", #"{"a":1}"#, "[", "\"", "ok", "update_after",
        "lazy", "\u{0}", "é", #""\ud800""#, String(repeating: "[", count: 2000), String(repeating: "9", count: 400),
    ]

    @Test("The query-parameter parser, on random parameters: valid options or CouchDB's error; never a crash")
    func queryParameters() throws {
        var valid = 0
        let iterations = fuzz("query parameters") { generator in
            let parameters = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                var value = Self.parameterValues.randomElement(using: &generator)!
                if Bool.random(using: &generator) {
                    value = String(decoding: mutate(Array(value.utf8), using: &generator), as: UTF8.self)
                }
                return (name: Self.parameterNames.randomElement(using: &generator)!, value: value)
            }
            let reduce = Bool.random(using: &generator)
            do throws(QueryError) {
                let options = try ViewQueryOptions(parameters: parameters)
                let view = try options.validated(viewHasReduce: reduce) { CollationKey.compare($0, $1, mode: .unicode) }
                #expect(view.skip >= 0 && (view.limit ?? 0) >= 0 && (view.groupLevel ?? 0) >= 0)
                #expect(!(reduce && view.reduce != false && view.includeDocs), "\(parameters): include_docs on a reduce")
                _ = try? options.validatedForAllDocs()
                valid += 1
            } catch {
                #expect(!error.error.isEmpty && !error.reason.isEmpty, "\(parameters)")
            }
        }
        #expect(valid > 0 && valid < iterations, "both valid and invalid parameter sets")
    }
}
