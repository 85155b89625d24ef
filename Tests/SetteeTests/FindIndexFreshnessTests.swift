import Foundation
import Synchronization
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

    /// A database of 3,000 documents with a `colour` and `tags`, and indexes of both, not built.
    private func coloursAndTags(in directory: TemporaryDirectory) throws -> Database {
        let db = try open(directory.url.appendingPathComponent("db"))
        let lines = (0..<3000).map { #"{"_id": "d\#($0)", "colour": "\#($0 % 3 == 0 ? "red" : "blue")", "tags": ["t\#($0 % 7)"]}"# }
        #expect(try db.importDocuments(Data(lines.joined(separator: "\n").utf8)).imported == 3000)
        try db.createIndex(colourIndex)
        try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
        return db
    }

    @Test("find and findElements tell their progress while they bring their index up to date, and nothing once it is")
    func progress() throws {
        let directory = TemporaryDirectory()
        let db = try coloursAndTags(in: directory)
        var told: [IndexProgress] = []
        #expect(try db.find(byColour("red"), progress: { told.append($0) }).found.count == 25, "a page")
        // The documents and the index's design document: the changes after the index's last sequence.
        #expect(told.last.map { $0.processed == $0.total && $0.total >= 3000 } == true, "\(told.map(\.processed))")
        told = []
        #expect(try db.find(byColour("red"), progress: { told.append($0) }).found.count == 25)
        #expect(told.isEmpty, "the index is current")
        let request = UnnestRequest(path: "tags", elementSelector: ["$eq": "t1"])
        #expect(try db.findElements(request, progress: { told.append($0) }).elements.count == 429)
        #expect(told.last.map { $0.processed == $0.total && $0.total >= 3000 } == true, "the array index built: \(told.map(\.processed))")
    }

    @Test("The async find and findElements tell their progress too")
    func asyncProgress() async throws {
        let directory = TemporaryDirectory()
        let db = try coloursAndTags(in: directory)
        let told = Mutex<[IndexProgress]>([])
        #expect(try await db.find(byColour("red"), progress: { progress in told.withLock { $0.append(progress) } }).found.count == 25)
        #expect(told.withLock { $0.last.map { $0.processed == $0.total && $0.total >= 3000 } } == true)
        told.withLock { $0 = [] }
        let request = UnnestRequest(path: "tags", elementSelector: ["$eq": "t1"])
        #expect(try await db.findElements(request, progress: { progress in told.withLock { $0.append(progress) } }).elements.count == 429)
        #expect(told.withLock { $0.last.map { $0.processed == $0.total && $0.total >= 3000 } } == true)
    }
}
