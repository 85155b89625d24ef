import Foundation
import Testing
import Settee

/// An empty selector `{}` matches every document only as the whole
/// selector (`mango_selector:match_int/2`). Inside `$and`, `$or`, `$nor` or
/// `$not` it is a bare value, so `mango_selector:norm_ops/1` makes it an
/// equality, `{"$eq": {}}`, and `norm_fields/2` gives it the empty path: it
/// compares the document itself with `{}`, which no document (it has an
/// `_id`) equals. So `{"$and": [{}, …]}` matches nothing, `{"$nor": [{}]}`
/// every document, and `{"$not": {}}` at the top is a condition with no
/// field name, refused.
@Suite("find: {} inside $and, $or, $nor and $not, as CouchDB normalizes and matches it")
struct FindEmptySelectorTests {
    static let documents = [
        #"{"_id": "a", "type": "x", "lists": [{}, 1]}"#,
        #"{"_id": "b", "type": "x", "lists": [{"k": 1}]}"#,
        #"{"_id": "c", "type": "y", "lists": [{}]}"#,
        #"{"_id": "d"}"#,
    ]

    /// Each selector and the documents it matches (in `_id` order).
    static let cases: [(selector: String, ids: [String])] = [
        (#"{"$and": [{}, {"type": "x"}]}"#, []),
        (#"{"$and": [{"type": "x"}, {}]}"#, []),
        (#"{"$and": [{}]}"#, []),
        (#"{"type": "x", "$and": [{}]}"#, []),
        (#"{"$or": [{}]}"#, []),
        (#"{"$or": [{}, {"type": "x"}]}"#, ["a", "b"]),
        (#"{"$nor": [{}]}"#, ["a", "b", "c", "d"]),
        (#"{"$nor": [{}], "type": "x"}"#, ["a", "b"]),
        (#"{"$and": [{"$nor": [{}]}, {"type": "y"}]}"#, ["c"]),
        (#"{"type": "x", "$or": [{"$not": {}}]}"#, ["a", "b"]),
        (#"{"type": {"$gt": null}, "$and": [{"$not": {"$and": [{}]}}]}"#, ["a", "b", "c"]),
        // Empty arrays are true (`match/3`'s first clauses), but a selector that
        // is only one reads nothing (`mango_cursor:maybe_noop_range/2`); `$nor: []` is `$and: []`.
        (#"{"$and": []}"#, []),
        (#"{"$or": [], "type": "y"}"#, ["c"]),
        (#"{"$and": [], "type": "y"}"#, ["c"]),
        (#"{"$nor": []}"#, []),
        (#"{"$nor": [], "type": "y"}"#, ["c"]),
        // `{}` inside $elemMatch is an element equal to `{}`.
        (#"{"lists": {"$elemMatch": {}}}"#, ["a", "c"]),
        (#"{"lists": {"$allMatch": {}}}"#, ["c"]),
        (#"{"type": "x", "lists": {"$elemMatch": {"$and": [{}]}}}"#, ["a"]),
    ]

    private func database(_ directory: TemporaryDirectory, indexed: Bool) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.write { batch in
            for document in Self.documents { try batch.put(document) }
        }
        if indexed { try db.createIndex(ValueIndex("type"), name: "type") }
        return db
    }

    private func ids(_ result: FindResult) -> [String] {
        result.documents.compactMap { $0["_id"]?.stringValue }.sorted()
    }

    @Test("a full scan and a JSON index on type find the same documents as CouchDB", arguments: [false, true])
    func matches(indexed: Bool) throws {
        let directory = TemporaryDirectory()
        let db = try database(directory, indexed: indexed)
        for (selector, expected) in Self.cases {
            let request = FindRequest(selector: try JSONValue(parsing: selector))
            #expect(ids(try db.find(request)) == expected, "\(selector)")
            #expect(ids(try db.find(try FindRequest(json: #"{"selector": \#(selector)}"#))) == expected, "\(selector)")
        }
        if indexed {
            let request = FindRequest(selector: try JSONValue(parsing: #"{"$and": [{}, {"type": "x"}]}"#))
            #expect(try db.explain(request)["index"]?["name"] == "type")
            #expect(try db.explain(request)["selector"] == ["$and": [["": ["$eq": [:]]], ["type": ["$eq": "x"]]]])
        }
    }

    @Test("{\"$not\": {}} is a condition without a field name: invalid_selector, through find and _find")
    func notEmpty() async throws {
        let expected = MangoError(error: "invalid_selector", reason: "One or more conditions is missing a field name.")
        #expect(mangoError { _ = try MangoSelector(["$not": [:]]) } == expected)
        let directory = TemporaryDirectory()
        let db = try database(directory, indexed: false)
        #expect(mangoError { _ = try db.find(FindRequest(selector: ["$not": [:]])) } == expected)
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let reply = try await server.request("POST", "/db/_find", json: ["selector": ["$not": [:]]])
        #expect(reply.status == 400)
        #expect(reply.json == ["error": "invalid_selector", "reason": "One or more conditions is missing a field name."])
        let nor = try await server.request("POST", "/db/_find", json: ["selector": ["$nor": [[:]]]])
        #expect(nor.status == 200)
        await server.stop()
    }
}
