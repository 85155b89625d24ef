import Foundation
import PropertyBased
import Testing
import SetteeCore
@testable import Settee

/// CollationTests checks encodings against the comparator in memory; this
/// checks the whole way: random keys emitted by JavaScript into a real index
/// and read back by a query.
@Suite("Collation properties")
struct CollationPropertyTests {
    /// A random value whose objects have distinct, non-numeric member names:
    /// JavaScript keeps the last of duplicate names and puts integer-like names
    /// first, so those would not come back as written (in CouchDB either).
    static func emittableValue(using generator: inout SplitMix64) -> JSONValue {
        func clean(_ value: JSONValue) -> JSONValue {
            switch value {
            case .array(let elements): return .array(elements.map(clean))
            case .object(let members):
                var seen = Set<String>()
                return .object(members.compactMap { member in
                    let name = "k" + member.key
                    return seen.insert(name).inserted ? (key: name, value: clean(member.value)) : nil
                })
            default: return value
            }
        }
        return clean(CollationRandomJSON.value(using: &generator, depth: 0))
    }

    @Test("Random keys through the engine and a real index come back as emitted, in the reference comparator's order",
          .shrinking(false))
    func indexedKeys() async throws {
        await propertyCheck(count: 8, input: Gen.uint64(in: 1...UInt64.max)) { seed in
            var generator = SplitMix64(seed: seed)
            let values = (0..<80).map { _ in Self.emittableValue(using: &generator) }
            let ids = values.indices.map { String(format: "d%03d", $0) }
            let directory = TemporaryDirectory()
            var options = Database.Options()
            options.javaScriptWorkers = 1
            let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
            try await db.loadDesignDocuments(from: directory.file("keys.json", contents: #"""
                {"_id": "_design/keys", "views": {
                  "unicode": {"map": "function (doc) { emit(doc.k, null); }"},
                  "raw": {"map": "function (doc) { emit(doc.k, null); }", "options": {"collation": "raw"}}}}
                """#))
            let lines = zip(ids, values).map { JSONValue.object([("_id", .string($0)), ("k", $1)]).jsonText }
            _ = try await db.importDocuments(Data(lines.joined(separator: "\n").utf8))
            for (view, mode) in [("keys/unicode", CollationMode.unicode), ("keys/raw", .raw)] {
                let rows = try await db.query(view, options: ViewQueryOptions(parameters: [])).rows
                let index = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
                for row in rows {
                    let original = values[index[row.id!]!]
                    #expect(try JSONValue(parsing: row.keyJSON) == original, "\(view): \(row.keyJSON) was emitted as \(original.jsonText)")
                }
                let expected = values.indices.sorted {
                    let order = CollationKey.compare(values[$0], values[$1], mode: mode)
                    return order != 0 ? order < 0 : ids[$0] < ids[$1]
                }
                #expect(rows.map(\.id) == expected.map { ids[$0] }, "\(view)")
            }
        }
    }
}
