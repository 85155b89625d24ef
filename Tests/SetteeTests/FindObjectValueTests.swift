import Foundation
import Testing
import Settee

@Suite("find through a JSON index: object values sort last and are found")
struct FindObjectValueTests {
    @Test("Documents whose indexed field is an object, empty or not, are found through the index, as without it")
    func objectValues() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.write { batch in
            _ = try batch.put(#"{"_id": "a", "name": "Ann"}"#)
            _ = try batch.put(#"{"_id": "b", "name": {"first": "Bob", "last": "Ray"}}"#)
            _ = try batch.put(#"{"_id": "c", "name": {}}"#)
            _ = try batch.put(#"{"_id": "d", "name": ["Dee"]}"#)
            _ = try batch.put(#"{"_id": "e", "name": {"zzz": {"zzz": 1}}}"#)
        }
        let everyName = FindRequest(selector: ["name": ["$exists": true]])
        let scanned = try db.find(everyName).documents.compactMap { $0["_id"]?.stringValue }
        #expect(scanned == ["a", "b", "c", "d", "e"])
        _ = try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["name"]}, "name": "name", "ddoc": "name"}"#))
        let indexed = try db.find(everyName)
        #expect(indexed.warning == nil)
        #expect(indexed.documents.compactMap { $0["_id"]?.stringValue }.sorted() == ["a", "b", "c", "d", "e"])
        let objects = try db.find(FindRequest(selector: ["name": ["$gt": ["Zed"]]]))
        #expect(objects.documents.compactMap { $0["_id"]?.stringValue }.sorted() == ["b", "c", "e"])
    }
}
