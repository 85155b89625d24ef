import Foundation
import Testing
@testable import SetteeCore
import Settee

/// Integers past 2^53 are kept as written (`JSONValue.number`'s literal);
/// CouchDB compares them exactly (Erlang's integers), so `_find` and the
/// collation do too: two integers one apart are different values even when
/// they round to the same `Double`.
@Suite("Integers past 2^53 compare exactly")
struct FindBigIntegerTests {
    private static func number(_ text: String) throws -> JSONValue { try JSONValue(parsing: text) }

    @Test("The collation orders integers past 2^53 exactly, against each other and against doubles")
    func collation() throws {
        let pairs: [(String, String, Int)] = [
            ("9007199254740993", "9007199254740992", 1),
            ("9007199254740992", "9007199254740993", -1),
            ("9007199254740993", "9007199254740993", 0),
            ("9007199254740993", "9007199254740992.0", 1),   // a float: Erlang's 9007199254740992.0
            ("9007199254740993.0", "9007199254740992", 0),   // a float rounds as Erlang reads it
            ("12345678901234567891", "12345678901234567890", 1),
            ("12345678901234567890", "1.2345678901234567e19", 1),  // the float is 12345678901234567168
            ("12345678901234567168", "1.2345678901234567e19", 0),
            ("-9007199254740993", "-9007199254740992", -1),
            ("-12345678901234567891", "-12345678901234567890", -1),
            // 1e32 is the double 100000000000000005366162204393472, compared exactly as Erlang does.
            ("100000000000000000000000000000001", "1e32", -1),
            ("100000000000000005366162204393473", "1e32", 1),
            ("100000000000000005366162204393472", "1e32", 0),
            ("1", "1.0", 0),
        ]
        for (left, right, expected) in pairs {
            for mode in [CollationMode.unicode, .raw] {
                let order = CollationKey.compare(try Self.number(left), try Self.number(right), mode: mode)
                #expect(order == expected, "\(left) against \(right) in \(mode) mode")
                let reversed = CollationKey.compare(try Self.number(right), try Self.number(left), mode: mode)
                #expect(reversed == -expected, "\(right) against \(left) in \(mode) mode")
            }
        }
        // Inside arrays and objects too.
        #expect(CollationKey.compare(try JSONValue(parsing: "[9007199254740993, 1]"), try JSONValue(parsing: "[9007199254740992, 2]"), mode: .unicode) == 1)
    }

    private static let values = ["9007199254740991", "9007199254740992", "9007199254740993", "9007199254740994",
                                 "9007199254740995", "12345678901234567890", "12345678901234567891", "-9007199254740993",
                                 "-9007199254740992", "1.5"]

    /// A database holding one document per value of ``values`` (`{"_id": "d<i>", "a": value}`).
    private static func database(at url: URL, indexed: Bool) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: url, options: options)
        for (number, value) in values.enumerated() { try db.put(#"{"_id": "d\#(number)", "a": \#(value)}"#) }
        if indexed { try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["a"]}, "ddoc": "a", "name": "a"}"#)) }
        return db
    }

    /// The `a` values (as written) of the documents `selector` finds.
    private static func found(_ selector: String, in db: Database) throws -> [String] {
        var request = FindRequest(selector: try JSONValue(parsing: selector))
        request.limit = 100
        return try db.find(request).documents.map { document in
            let id = document["_id"]!.stringValue!
            return values[Int(id.dropFirst())!]
        }.sorted()
    }

    @Test("$eq, $gt, $gte, $lt, $lte, $ne and $in find exactly the integers they name, with a JSON index on the field and without")
    func selectors() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settee-bigint-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let scanned = try Self.database(at: folder.appendingPathComponent("scanned"), indexed: false)
        let indexed = try Self.database(at: folder.appendingPathComponent("indexed"), indexed: true)
        let cases: [(String, [String])] = [
            (#"{"a": 9007199254740993}"#, ["9007199254740993"]),
            (#"{"a": 9007199254740992}"#, ["9007199254740992"]),
            (#"{"a": {"$eq": 12345678901234567891}}"#, ["12345678901234567891"]),
            (#"{"a": {"$gt": 9007199254740992}}"#, ["12345678901234567890", "12345678901234567891", "9007199254740993", "9007199254740994", "9007199254740995"]),
            (#"{"a": {"$gte": 9007199254740993, "$lt": 9007199254740995}}"#, ["9007199254740993", "9007199254740994"]),
            (#"{"a": {"$gt": 9007199254740993, "$lte": 12345678901234567890}}"#, ["12345678901234567890", "9007199254740994", "9007199254740995"]),
            (#"{"a": {"$lt": -9007199254740992}}"#, ["-9007199254740993"]),
            (#"{"a": {"$gt": -9007199254740993, "$lt": 0}}"#, ["-9007199254740992"]),
            (#"{"a": {"$gt": 12345678901234567890}}"#, ["12345678901234567891"]),
            (#"{"a": {"$in": [9007199254740993, 12345678901234567890]}}"#, ["12345678901234567890", "9007199254740993"]),
            (#"{"a": {"$gt": 9000000000000000, "$ne": 9007199254740993}}"#, ["12345678901234567890", "12345678901234567891", "9007199254740991", "9007199254740992", "9007199254740994", "9007199254740995"]),
        ]
        for (selector, expected) in cases {
            let (throughScan, throughIndex) = (try Self.found(selector, in: scanned), try Self.found(selector, in: indexed))
            #expect(throughScan == expected.sorted(), "scanned: \(selector)")
            #expect(throughIndex == expected.sorted(), "through the index: \(selector)")
        }
        // Answered from the index's keys alone (a covering index): the numbers as written.
        var covered = FindRequest(selector: try JSONValue(parsing: #"{"a": {"$gte": 12345678901234567891}}"#))
        covered.fields = ["a"]
        covered.executionStats = true
        let coveredResult = try indexed.find(covered)
        #expect(coveredResult.executionStats?.totalDocsExamined == 0)
        #expect(coveredResult.documents.map { $0["a"] } == [try JSONValue(parsing: "12345678901234567891")])

        // A request of a shape planned before (with a small number) reuses that plan: the reuse is exact too.
        #expect(try Self.found(#"{"a": 5}"#, in: indexed) == [])
        #expect(try Self.found(#"{"a": 9007199254740993}"#, in: indexed) == ["9007199254740993"])
        #expect(try Self.found(#"{"a": {"$gt": 7}}"#, in: indexed).count == 7)
        #expect(try Self.found(#"{"a": {"$gt": 9007199254740993}}"#, in: indexed) == ["12345678901234567890", "12345678901234567891", "9007199254740994", "9007199254740995"])
    }
}
