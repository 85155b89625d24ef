import Foundation
import Testing
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

private func ids(_ result: FindResult) -> [String] {
    result.documents.compactMap { $0["_id"]?.stringValue }
}

@Suite("find over _all_docs: the planner's _id range, and explain's options")
struct FindIDRangeTests {
    /// Ids whose byte order (A B C a b c) is not their collation order (a A b B c C).
    private func letters(_ db: Database) throws {
        try db.write { batch in
            for id in ["A", "B", "C", "a", "b", "c"] { try batch.put(#"{"_id": "\#(id)"}"#) }
        }
    }

    @Test("Conditions on _id narrow in collation order, as CouchDB's planner narrows them; the ids between are read in byte order")
    func collationOrderBounds() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try letters(db)
        // "a" collates before "B": the planner's range is empty and nothing is read, though "C" lies between them
        // in byte order, the order _id conditions match in.
        let empty = try db.find(FindRequest(json: #"{"selector": {"_id": {"$gt": "B", "$lt": "a"}}, "execution_stats": true}"#))
        #expect(ids(empty) == [])
        #expect(empty.executionStats?.totalDocsExamined == 0, "nothing is read")
        // Of "$gt a" and "$gt B", "B" is the higher bound in collation order (in byte order it is "a"):
        // the scan starts at "B", and the conditions match the ids after "a" in byte order.
        let above = try db.find(FindRequest(json: #"{"selector": {"$and": [{"_id": {"$gt": "a"}}, {"_id": {"$gt": "B"}}]}, "execution_stats": true}"#))
        #expect(ids(above) == ["b", "c"])
        #expect(above.executionStats?.totalDocsExamined == 4, "C, a, b and c are read")
        let equal = try db.find(FindRequest(json: #"{"selector": {"_id": {"$gte": "b", "$lte": "b"}}, "execution_stats": true}"#))
        #expect(ids(equal) == ["b"])
        #expect(equal.executionStats?.totalDocsExamined == 1)
        // Bounds that are no strings leave the scan open at that end.
        #expect(ids(try db.find(FindRequest(json: #"{"selector": {"_id": {"$gt": null}}, "sort": [{"_id": "desc"}]}"#))) == ["c", "b", "a", "C", "B", "A"])
        #expect(ids(try db.find(FindRequest(json: #"{"selector": {"_id": {"$lt": 5}}}"#))) == [])
    }

    @Test("explain shows stale as the request gave it; mrargs what update, stable and stale mean together")
    func staleAsGiven() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "a", "name": "age"}"#))
        func explain(_ options: String) throws -> (opts: JSONValue?, mrargs: JSONValue?) {
            let plan = try db.explain(try FindRequest(json: #"{"selector": {"age": {"$gt": 20}}\#(options)}"#))
            return (plan["opts"], plan["mrargs"])
        }
        let plain = try explain("")
        #expect(plain.opts?["stale"] == false && plain.opts?["update"] == true && plain.opts?["stable"] == false)
        #expect(plain.mrargs?["update"] == true && plain.mrargs?["stable"] == false)
        let notUpdated = try explain(#", "update": false, "stable": true"#)
        #expect(notUpdated.opts?["stale"] == false, "the request did not say stale")
        #expect(notUpdated.opts?["update"] == false && notUpdated.opts?["stable"] == true)
        #expect(notUpdated.mrargs?["update"] == false && notUpdated.mrargs?["stable"] == true)
        let stale = try explain(#", "stale": "ok""#)
        #expect(stale.opts?["stale"] == "ok")
        #expect(stale.opts?["update"] == true && stale.opts?["stable"] == false, "update and stable as given")
        #expect(stale.mrargs?["update"] == false && stale.mrargs?["stable"] == true, "stale ok reads the index as it is")
        #expect(try explain(#", "stale": false"#).opts?["stale"] == false)
    }

    @Test("stale ok reads the index as it is: documents written since are not found until an update")
    func staleReadsTheIndexAsItIs() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "a", "name": "age"}"#))
        try db.put(#"{"_id": "old", "age": 30}"#)
        let request = #"{"selector": {"age": {"$gt": 20}}, "fields": ["_id"]"#
        #expect(ids(try db.find(FindRequest(json: request + "}"))) == ["old"])
        try db.put(#"{"_id": "new", "age": 40}"#)
        #expect(ids(try db.find(FindRequest(json: request + #", "stale": "ok"}"#))) == ["old"])
        #expect(ids(try db.find(FindRequest(json: request + "}"))) == ["old", "new"])
    }
}
