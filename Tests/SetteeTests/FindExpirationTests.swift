import Foundation
import Testing
import Settee

/// A document past its expiration time reads as missing before the purge
/// that removes it has run: to every `find` path as to `get`.
@Suite("find: a document past its expiration time is found by no read, before its purge")
struct FindExpirationTests {
    private func open(_ directory: TemporaryDirectory, readOnly: Bool = false) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        options.readOnly = readOnly
        return try Database(at: directory.url.appendingPathComponent("db"), options: options)
    }

    private func ids(_ result: FindResult) -> [String] {
        result.documents.compactMap { $0["_id"]?.stringValue }
    }

    /// The queries, each with the index it must use, and what it finds while every document is live.
    static let queries: [(request: String, index: String?, live: [String])] = [
        (#"{"selector": {"tags": {"$elemMatch": {"$eq": 2}}}}"#, "tags", ["a", "b"]),
        (#"{"selector": {"tags": {"$all": [2]}}, "sort": [{"_id": "desc"}]}"#, "tags", ["b", "a"]),
        (#"{"selector": {"n": {"$gt": 0}}, "fields": ["_id", "n"]}"#, "n", ["a", "b", "c"]),
        (#"{"selector": {"n": {"$gt": 0}}}"#, "n", ["a", "b", "c"]),
        (#"{"selector": {"_id": {"$gt": null}}}"#, nil, ["a", "b", "c"]),
        (#"{"selector": {"_id": {"$in": ["a", "c"]}}}"#, nil, ["a", "c"]),
    ]

    @Test("array index reads (find and UNNEST), JSON and covering index reads and full scans leave out an expired document not yet purged")
    func expiredNotPurged() throws {
        let directory = TemporaryDirectory()
        do {
            let db = try open(directory)
            try db.put(#"{"_id": "a", "n": 1, "tags": [1, 2]}"#)
            try db.put(#"{"_id": "b", "n": 2, "tags": [2, 3]}"#)
            try db.put(#"{"_id": "c", "n": 3, "tags": [3]}"#)
            try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
            try db.createIndex(ValueIndex("n"), name: "n")
            for (text, index, live) in Self.queries {
                let request = try FindRequest(json: text)
                #expect(ids(try db.find(request)) == live, "\(text)")
                if let index { #expect(try db.explain(request)["index"]?["name"] == .string(index), "\(text)") }
            }
            #expect(try db.findElements(UnnestRequest(path: "tags", elementSelector: ["$eq": 2])).elements.map(\.documentID) == ["a", "b"])
            try db.setExpiration(Date().addingTimeInterval(0.2), for: "a")
        }
        // Closed before its time, and opened read-only after it: the document is not purged.
        Thread.sleep(forTimeInterval: 0.4)
        let db = try open(directory, readOnly: true)
        #expect(try db.document("a") == nil)
        #expect(try db.expiration(of: "a") != nil, "not purged")
        for (text, _, live) in Self.queries {
            var request = try FindRequest(json: text)
            #expect(ids(try db.find(request)) == live.filter { $0 != "a" }, "\(text)")
            request.update = false
            #expect(ids(try db.find(request)) == live.filter { $0 != "a" }, "\(text), update: false")
        }
        let elements = try db.findElements(UnnestRequest(path: "tags", elementSelector: ["$eq": 2]))
        #expect(elements.elements.map(\.documentID) == ["b"])
        let all = try db.findElements(UnnestRequest(path: "tags"))
        #expect(all.elements.map(\.documentID) == ["b", "b", "c"])
    }
}
