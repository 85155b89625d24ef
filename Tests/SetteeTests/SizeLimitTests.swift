import Foundation
import Testing
@testable import Settee

/// Whether `error` carries CouchDB's `document_too_large` code.
private func isTooLarge(_ error: any Error) -> Bool {
    (error as? any SetteeError)?.errorCode.rawValue == "document_too_large"
}

/// A JSON document of exactly `bytes` bytes: `{"_id":"ID","pad":"ppp…"}`.
private func document(id: String, bytes: Int) -> String {
    let head = #"{"_id":"\#(id)","pad":""#
    return head + String(repeating: "p", count: bytes - head.utf8.count - 2) + #""}"#
}

@Suite("Document size limits with CouchDB's defaults", .ownThread)
struct SizeLimitTests {
    @Test("A document over 8000000 bytes (CouchDB's max_document_size) is refused with document_too_large, through put, a write batch and Codable; at the limit it is stored")
    func documentLimit() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let atLimit = document(id: "fits", bytes: 8_000_000)
        #expect(atLimit.utf8.count == 8_000_000)
        try db.put(atLimit)
        #expect(try db.document("fits") != nil)

        let over = document(id: "big", bytes: 8_000_001)
        let error = try #require(throws: (any Error).self) { try db.put(over) }
        #expect(isTooLarge(error), "\(error)")
        #expect("\(error)".contains("8000001") && "\(error)".contains("8000000"), "the message names the size and the limit: \(error)")
        #expect(try db.document("big") == nil)

        let batchError = try #require(throws: (any Error).self) { try db.write { try $0.put(over) } }
        #expect(isTooLarge(batchError), "\(batchError)")
        #expect(try db.document("big") == nil)

        struct Padded: Codable { var pad: String }
        let codableError = try #require(throws: (any Error).self) {
            try db.put(Padded(pad: String(repeating: "p", count: 8_000_000)), id: "coded")
        }
        #expect(isTooLarge(codableError), "\(codableError)")
        #expect(try db.document("coded") == nil)
    }

    @Test("Design documents have a lower limit (2000000 bytes), whether put or loaded from a file; an ordinary document that size is stored")
    func designDocumentLimit() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(document(id: "ordinary", bytes: 3_000_000))

        let error = try #require(throws: (any Error).self) { try db.put(document(id: "_design/big", bytes: 2_000_001)) }
        #expect(isTooLarge(error), "\(error)")
        #expect((error as? DocumentError)?.id == "_design/big")
        #expect(try db.document("_design/big") == nil)

        let padding = String(repeating: " ", count: 2_000_000)
        let file = directory.file("big.json", contents: #"{"_id": "_design/file", "views": {"v": {"map": "function (doc) { emit(doc._id, null); }"}}}"# + padding)
        let loadError = try #require(throws: DesignDocumentErrors.self) { try db.loadDesignDocuments(from: file) }
        #expect(loadError.description.contains("document_too_large"), "\(loadError)")
        #expect(loadError.description.contains(file.path), "\(loadError)")
        #expect(try db.document("_design/file") == nil)
    }

    @Test("Import: an oversized document is listed with its line, the others are written (NDJSON and JSON array)")
    func importRejectsLargeDocuments() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        // 10 MB spans chunks of the read, so the line is refused before it is whole.
        let big = document(id: "big", bytes: 10_000_000)
        let small = document(id: "small", bytes: 9_000_000)
        let lines = [#"{"_id":"a"}"#, big, #"{"_id":"b"}"#, small, #"{"_id":"c"}"#, "not json"].joined(separator: "\n")
        let report = try db.importDocuments(Data(lines.utf8))
        #expect(report.imported == 3)
        #expect(report.rejected.map(\.line) == [2, 4, 6])
        #expect(report.rejected.prefix(2).allSatisfy { isTooLarge($0.error) }, "\(report.rejected)")
        #expect(try ["a", "b", "c"].allSatisfy { try db.document($0) != nil })

        let array = "[\n" + [#"{"_id":"d"}"#, big, #"{"_id":"e"}"#, small, #"{"_id":"f"}"#].joined(separator: ",\n") + "\n]"
        let arrayReport = try db.importDocuments(Data(array.utf8))
        #expect(arrayReport.imported == 3)
        #expect(arrayReport.rejected.map(\.line) == [3, 5])
        #expect(arrayReport.rejected.allSatisfy { isTooLarge($0.error) }, "\(arrayReport.rejected)")
        #expect(try ["d", "e", "f"].allSatisfy { try db.document($0) != nil })
    }

    @Test("settee import: a 256 MB line is refused without being held in memory; the other lines are written and the exit status says some were rejected")
    func importHugeLine() throws {
        let directory = TemporaryDirectory()
        let input = directory.url.appendingPathComponent("input.ndjson")
        _ = FileManager.default.createFile(atPath: input.path, contents: nil)
        let handle = try FileHandle(forWritingTo: input)
        handle.write(Data(#"{"_id":"first"}"#.utf8 + [0x0A]))
        handle.write(Data(#"{"_id":"huge","pad":""#.utf8))
        let block = Data(repeating: UInt8(ascii: "p"), count: 1 << 20)
        for _ in 0..<256 { handle.write(block) }
        handle.write(Data(#""}"#.utf8 + [0x0A]))
        handle.write(Data(#"{"_id":"last"}"#.utf8 + [0x0A]))
        try handle.close()

        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let outcome = try settee.run(["--db", db, "import", input.path], in: directory.url)
        #expect(outcome.exitStatus != 0, "some documents were rejected: \(outcome.standardError)")
        let report = try JSONValue(parsing: outcome.standardOutput)
        #expect(report["imported"] == .number(2), "\(outcome.standardOutput)")
        #expect(report["rejected"]?.arrayValue?.first?["line"] == .number(2), "\(outcome.standardOutput)")
        #expect(report["rejected"]?.arrayValue?.first?["error"] == .string("document_too_large"), "\(outcome.standardOutput)")
        #expect(outcome.peakResidentBytes < 160 << 20, "peak \(outcome.peakResidentBytes >> 20) MiB")
        print("a 256 MB line in `settee import`: peak resident \(outcome.peakResidentBytes >> 20) MiB")
        let get = try settee.run(["--db", db, "get", "last"], in: directory.url)
        #expect(get.exitStatus == 0)
    }
}
