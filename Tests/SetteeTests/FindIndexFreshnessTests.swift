import Foundation
import Testing
import Settee

private func open(_ url: URL) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: url, options: options)
}

/// The index every test here makes.
private let colourIndex = try! IndexRequest(json: #"{"index": {"fields": ["colour"]}, "ddoc": "c", "name": "colour"}"#)

private func byColour(_ colour: String, update: Bool = true) -> FindRequest {
    var request = FindRequest(selector: ["colour": .string(colour)])
    request.update = update
    return request
}

@Suite("find's index up-to-date check: skipped only while nothing is committed")
struct FindIndexFreshnessTests {
    @Test("A document written after the index was found up to date is found by the next query")
    func writeAfterFreshCheck() throws {
        let directory = TemporaryDirectory()
        let db = try open(directory.url.appendingPathComponent("db"))
        try db.createIndex(colourIndex)
        try db.put(#"{"_id": "a", "colour": "red"}"#)
        #expect(try db.find(byColour("red")).found.count == 1)
        #expect(try db.find(byColour("red")).found.count == 1, "asked again, nothing written")
        try db.put(#"{"_id": "b", "colour": "red"}"#)
        #expect(try db.find(byColour("red")).found.count == 2)
        try db.put(#"{"_id": "c", "colour": "blue"}"#)
        #expect(try db.find(byColour("blue")).found.count == 1)
        #expect(try db.find(byColour("red")).found.count == 2)
    }

    @Test("A write through another Database on the same file is found after the index was found up to date")
    func writeThroughAnotherInstance() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let reader = try open(url)
        try reader.createIndex(colourIndex)
        try reader.put(#"{"_id": "a", "colour": "red"}"#)
        #expect(try reader.find(byColour("red")).found.count == 1)
        let writer = try open(url)
        try writer.put(#"{"_id": "b", "colour": "red"}"#)
        #expect(try reader.find(byColour("red")).found.count == 2)
    }

    @Test("A query that does not update leaves the next updating query to bring the index up to date")
    func staleThenUpdating() throws {
        let directory = TemporaryDirectory()
        let db = try open(directory.url.appendingPathComponent("db"))
        try db.createIndex(colourIndex)
        try db.put(#"{"_id": "a", "colour": "red"}"#)
        #expect(try db.find(byColour("red")).found.count == 1)
        try db.put(#"{"_id": "b", "colour": "red"}"#)
        #expect(try db.find(byColour("red", update: false)).found.count == 1, "the index as it was")
        #expect(try db.find(byColour("red", update: false)).found.count == 1)
        #expect(try db.find(byColour("red")).found.count == 2)
    }
}
