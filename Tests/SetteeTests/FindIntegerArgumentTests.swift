import Foundation
import Testing
import Settee

/// `$size`, `limit`, `skip` and `r` take integers, and CouchDB's JSON
/// decoder reads a number written with a fraction or an exponent (`2.0`,
/// `2e0`) as a float: such a request is refused, as CouchDB refuses it
/// (`mango_selector:norm_ops/1` for `$size`, `mango_opts:is_non_neg_integer/1`
/// and `is_pos_integer/1` for the options).
@Suite("find: $size, limit, skip and r written as floats are refused as CouchDB refuses them")
struct FindIntegerArgumentTests {
    /// The refusals, each with CouchDB's error and reason.
    static let refused: [(body: String, error: String, reason: String)] = [
        (#"{"selector": {"tags": {"$size": 2.0}}}"#, "bad_arg", "Bad argument for operator $size: 2.0"),
        (#"{"selector": {"tags": {"$size": 2e0}}}"#, "bad_arg", "Bad argument for operator $size: 2.0"),
        (#"{"selector": {"tags": {"$size": 1E3}}}"#, "bad_arg", "Bad argument for operator $size: 1.0e3"),
        (#"{"selector": {"tags": {"$size": 1.5}}}"#, "bad_arg", "Bad argument for operator $size: 1.5"),
        (#"{"selector": {"$and": [{"type": "a"}, {"tags": {"$size": 0.0}}]}}"#, "bad_arg", "Bad argument for operator $size: 0.0"),
        (#"{"selector": {"$or": [{"tags": {"$not": {"$size": 3.0}}}]}}"#, "bad_arg", "Bad argument for operator $size: 3.0"),
        (#"{"selector": {"nested": {"tags": {"$size": 2.0}}}}"#, "bad_arg", "Bad argument for operator $size: 2.0"),
        (#"{"selector": {"lists": {"$elemMatch": {"$size": 1.0}}}}"#, "bad_arg", "Bad argument for operator $size: 1.0"),
        (#"{"selector": {"type": "a", "tags": {"$gt": null, "$size": 2.0}}}"#, "bad_arg", "Bad argument for operator $size: 2.0"),
        (#"{"selector": {"type": "a"}, "limit": 2.0}"#, "invalid_non_neg_integer", "2.0 is not an integer greater than or equal to zero"),
        (#"{"selector": {"type": "a"}, "limit": 1e1}"#, "invalid_non_neg_integer", "10.0 is not an integer greater than or equal to zero"),
        (#"{"selector": {"type": "a"}, "skip": 1.5}"#, "invalid_non_neg_integer", "1.5 is not an integer greater than or equal to zero"),
        (#"{"selector": {"type": "a"}, "skip": 1.0}"#, "invalid_non_neg_integer", "1.0 is not an integer greater than or equal to zero"),
        (#"{"selector": {"type": "a"}, "skip": 0.0}"#, "invalid_non_neg_integer", "0.0 is not an integer greater than or equal to zero"),
        (#"{"selector": {"type": "a"}, "r": 2.0}"#, "invalid_pos_integer", "2.0 is not an integer greater than zero"),
        // The last of repeated members is the one read.
        (#"{"selector": {"type": "a"}, "limit": 2, "limit": 2.0}"#, "invalid_non_neg_integer", "2.0 is not an integer greater than or equal to zero"),
    ]

    /// Integers, and floats where no integer is asked for, are accepted.
    static let accepted: [(body: String, ids: [String])] = [
        (#"{"selector": {"tags": {"$size": 2}}}"#, ["a", "c"]),
        (#"{"selector": {"tags": {"$size": 2}}, "limit": 1, "skip": 1, "r": 1}"#, ["c"]),
        // A value compared, not an operator's argument: `{"$size": 2.0}` is an object here.
        (#"{"selector": {"shape": {"$eq": {"$size": 2.0}}}}"#, ["b"]),
        (#"{"selector": {"type": "a"}, "fields": ["_id"], "limit": 0}"#, []),
        (#"{"selector": {"n": 2.0, "label": "$size: 2.0"}}"#, ["c"]),
        (#"{"selector": {"n": {"$in": [2.0, 3.5]}}, "limit": 3, "limit": 10}"#, ["a", "c"]),
        (#"{"selector": {"tags": {"$size": 2.0}, "tags": {"$size": 2}}}"#, ["a", "c"]),
    ]

    static let documents = [
        #"{"_id": "a", "type": "a", "n": 2, "tags": [1, 2]}"#,
        #"{"_id": "b", "type": "a", "shape": {"$size": 2}, "tags": [1]}"#,
        #"{"_id": "c", "type": "b", "n": 2.0, "label": "$size: 2.0", "tags": ["x", "y"]}"#,
    ]

    private func database(_ directory: TemporaryDirectory) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.write { batch in
            for document in Self.documents { try batch.put(document) }
        }
        return db
    }

    private func ids(_ result: FindResult) -> [String] {
        result.documents.compactMap { $0["_id"]?.stringValue }
    }

    @Test("FindRequest(json:) refuses them with CouchDB's bad_arg, invalid_non_neg_integer or invalid_pos_integer, and runs the rest")
    func swiftAPI() throws {
        for (body, error, reason) in Self.refused {
            let refusal = mangoError { _ = try FindRequest(json: body) }
            #expect(refusal == MangoError(error: error, reason: reason), "\(body)")
        }
        let directory = TemporaryDirectory()
        let db = try database(directory)
        for (body, expected) in Self.accepted {
            #expect(ids(try db.find(try FindRequest(json: body))) == expected, "\(body)")
        }
    }

    @Test("UNNEST's JSON refuses $size in either selector, and limit or skip, written as floats")
    func unnest() throws {
        let cases: [(String, MangoError)] = [
            (#"{"path": "lists", "element": {"$size": 2.0}}"#, .init(error: "bad_arg", reason: "Bad argument for operator $size: 2.0")),
            (#"{"path": "lists", "selector": {"tags": {"$size": 1.0}}}"#, .init(error: "bad_arg", reason: "Bad argument for operator $size: 1.0")),
            (#"{"path": "lists", "limit": 3.0}"#,
             .init(error: "invalid_non_neg_integer", reason: "3.0 is not an integer greater than or equal to zero")),
            (#"{"path": "lists", "skip": 2.5}"#,
             .init(error: "invalid_non_neg_integer", reason: "2.5 is not an integer greater than or equal to zero")),
        ]
        for (body, expected) in cases {
            #expect(mangoError { _ = try UnnestRequest(json: body) } == expected, "\(body)")
        }
        #expect(mangoError { _ = try UnnestRequest(json: #"{"path": "lists", "element": {"$size": 2}, "limit": 3}"#) } == nil)
    }

    @Test("_find, _explain and a partition's _find answer 400 with CouchDB's error and reason")
    func http() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        _ = try await server.request("PUT", "/parts?partitioned=true")
        for path in ["/db/_find", "/db/_explain", "/parts/_partition/p/_find", "/parts/_partition/p/_explain"] {
            for (body, error, reason) in Self.refused {
                let reply = try await server.request("POST", path, body: Data(body.utf8))
                #expect(reply.status == 400, "\(path) \(body)")
                #expect(reply.json == ["error": .string(error), "reason": .string(reason)], "\(path) \(body)")
            }
            for (body, _) in Self.accepted {
                let reply = try await server.request("POST", path, body: Data(body.utf8))
                #expect(reply.status == 200, "\(path) \(body): \(reply.json)")
            }
        }
        await server.stop()
    }

    @Test("_index refuses w, and $size or $mod in partial_filter_selector, written as floats; integers are accepted")
    func indexRequest() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let refused: [(String, JSONValue)] = [
            (#"{"index": {"fields": ["n"], "partial_filter_selector": {"tags": {"$size": 2.0}}}}"#,
             ["error": "bad_arg", "reason": "Bad argument for operator $size: 2.0"]),
            (#"{"index": {"fields": ["n"], "partial_filter_selector": {"$or": [{"n": {"$mod": [2.0, 0]}}]}}}"#,
             ["error": "bad_arg", "reason": "Bad argument for operator $mod: [2.0,0]"]),
            (#"{"index": {"fields": ["n"]}, "w": 2.0}"#, ["error": "invalid_pos_integer", "reason": "2.0 is not an integer greater than zero"]),
            (#"{"index": {"fields": ["n"], "partial_filter_selector": {"tags": {"$size": 1e0}}}, "w": 3.0}"#,
             ["error": "invalid_pos_integer", "reason": "3.0 is not an integer greater than zero"]),
        ]
        for (body, expected) in refused {
            let reply = try await server.request("POST", "/db/_index", body: Data(body.utf8))
            #expect(reply.status == 400, "\(body)")
            #expect(reply.json == expected, "\(body)")
        }
        let accepted = #"{"index": {"fields": ["n"], "partial_filter_selector": {"tags": {"$size": 2}, "n": {"$mod": [2, 0], "$gt": 1.5}}}, "w": 2}"#
        let reply = try await server.request("POST", "/db/_index", body: Data(accepted.utf8))
        #expect(reply.status == 200, "\(reply.json)")
        await server.stop()
    }
}
