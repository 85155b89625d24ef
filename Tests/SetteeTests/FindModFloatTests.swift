import Foundation
import Testing
import Settee

private func ids(_ result: FindResult) -> [String] {
    result.documents.compactMap { $0["_id"]?.stringValue }
}

@Suite("$mod and $all on stored numbers as CouchDB reads them: 26.0 is a float")
struct FindModFloatTests {
    static let documents = [
        #"{"_id": "a", "n": 26}"#,
        #"{"_id": "b", "n": 26.0}"#,
        #"{"_id": "c", "n": 2.6e1}"#,
        #"{"_id": "d", "n": -4}"#,
        #"{"_id": "e", "ns": [26.0, 31.5], "o": {"n": 1.0}}"#,
        #"{"_id": "f", "ns": [26, 31], "o": {"n": 11}}"#,
        #"{"_id": "g", "n": "26", "s": "26.0 is not a number here"}"#,
        #"{"_id": "h", "ns": [], "o": {"n": 1E0}}"#,
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

    @Test("$mod matches integers only: not 26.0 nor 2.6e1, wherever it is in the selector; $all's members match exactly; $eq and $in still compare by value")
    func modOnFloats() throws {
        let directory = TemporaryDirectory()
        let db = try database(directory)
        let cases: [(String, [String])] = [
            (#"{"n": {"$mod": [5, 1]}}"#, ["a"]),
            (#"{"n": {"$mod": [2, 0]}}"#, ["a", "d"]),
            (#"{"n": {"$not": {"$mod": [5, 1]}}}"#, ["b", "c", "d", "g"]),
            (#"{"ns": {"$elemMatch": {"$mod": [5, 1]}}}"#, ["f"]),
            (#"{"ns": {"$allMatch": {"$mod": [5, 1]}}}"#, ["f"]),
            (#"{"ns": {"$allMatch": {"$or": [{"$mod": [5, 1]}, {"$gt": 30}]}}}"#, ["f"]),
            (#"{"ns": {"$allMatch": {"$gt": 20}}}"#, ["e", "f"]),
            (#"{"$or": [{"n": {"$mod": [5, 1]}}, {"o.n": {"$mod": [10, 1]}}]}"#, ["a", "f"]),
            (#"{"o": {"$and": [{"n": {"$mod": [10, 1]}}]}, "_id": {"$gt": null}}"#, ["f"]),
            // $all finds its arguments by Erlang's exact match: 26 is not 26.0; one array argument equal to the whole array compares by value.
            (#"{"ns": {"$all": [26]}}"#, ["f"]),
            (#"{"ns": {"$all": [31.5]}}"#, ["e"]),
            (#"{"ns": {"$all": [26, 31]}}"#, ["f"]),
            (#"{"ns": {"$all": [[26, 31.5]]}}"#, ["e"]),
            (#"{"n": {"$eq": 26}}"#, ["a", "b", "c"]),
            (#"{"n": {"$in": [26, -4]}}"#, ["a", "b", "c", "d"]),
            (#"{"ns": {"$elemMatch": {"$eq": 26}}}"#, ["e", "f"]),
        ]
        for (text, expected) in cases {
            var request = FindRequest(selector: try JSONValue(parsing: text))
            request.limit = 100
            #expect(ids(try db.find(request)) == expected, "\(text)")
        }
    }

    @Test("A JSON index that would cover the query still reads the documents for $mod, whose keys lost how the numbers were written")
    func modThroughAnIndex() throws {
        let directory = TemporaryDirectory()
        let db = try database(directory)
        try db.createIndex(ValueIndex("n"), name: "n")
        let request = try FindRequest(json: #"{"selector": {"n": {"$mod": [5, 1]}}, "fields": ["_id", "n"], "use_index": "n"}"#)
        #expect(try db.explain(request)["index"]?["name"] == "n")
        let found = try db.find(request)
        #expect(ids(found) == ["a"])
        #expect(try db.find(try FindRequest(json: #"{"selector": {"n": {"$gt": 0}}, "fields": ["_id"], "use_index": "n"}"#)).documents.count == 4,
                "a, b, c, and g (a string is above every number)")
    }

    @Test("UNNEST's element conditions see floats too")
    func unnestElements() throws {
        let directory = TemporaryDirectory()
        let db = try database(directory)
        let found = try db.findElements(UnnestRequest(path: "ns", elementSelector: ["$mod": [5, 1]]))
        #expect(found.elements.map { "\($0.documentID)#\($0.position)" } == ["f#0", "f#1"])
        let all = try db.findElements(UnnestRequest(path: "ns", elementSelector: ["$gt": 0]))
        #expect(all.elements.map { "\($0.documentID)#\($0.position)" } == ["e#0", "e#1", "f#0", "f#1"])
    }
}
