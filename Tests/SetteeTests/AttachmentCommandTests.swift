import Foundation
import Testing
@testable import Settee

/// A file of `count` bytes that are not all alike, written without holding them all.
private func writePatternFile(_ url: URL, bytes count: Int, seed: UInt8 = 0) throws {
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    let handle = try FileHandle(forWritingTo: url)
    defer { try? handle.close() }
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    var written = 0
    while written < count {
        let size = min(chunk.count, count - written)
        for index in 0..<size { chunk[index] = UInt8(truncatingIfNeeded: (written + index) &* 2_654_435_761 >> 13) &+ seed }
        try handle.write(contentsOf: chunk[0..<size])
        written += size
    }
}

private func sameFiles(_ a: URL, _ b: URL) throws -> Bool {
    let first = try FileHandle(forReadingFrom: a), second = try FileHandle(forReadingFrom: b)
    defer { try? first.close(); try? second.close() }
    while true {
        let x = try first.read(upToCount: 1 << 20) ?? Data(), y = try second.read(upToCount: 1 << 20) ?? Data()
        if x != y { return false }
        if x.isEmpty { return true }
    }
}

@Suite("settee attachment put/get/delete and get --attachments", .ownThread)
struct AttachmentCommandTests {
    @Test("The issue's document with an inline attachment is put, got as a stub, and with --attachments as data")
    func inlineThroughTheTool() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let put = try settee.run(["--db", db, "put", #"{"_id":"a1","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#], in: directory.url)
        #expect(put.exitStatus == 0, "\(put.standardError)")
        let rev = try #require(try JSONValue(parsing: put.standardOutput)["rev"]?.stringValue)
        let stub = try settee.run(["--db", db, "get", "a1"], in: directory.url)
        #expect(stub.standardOutput == #"{"_id":"a1","_rev":"\#(rev)","_attachments":{"x.txt":{"content_type":"text/plain","revpos":1,"digest":"md5-iMaiC8wqiFlD2NjLTemvCQ==","length":5,"stub":true}}}"# + "\n")
        let inline = try settee.run(["--db", db, "get", "a1", "--attachments", "true"], in: directory.url)
        #expect(inline.standardOutput == #"{"_id":"a1","_rev":"\#(rev)","_attachments":{"x.txt":{"content_type":"text/plain","revpos":1,"digest":"md5-iMaiC8wqiFlD2NjLTemvCQ==","data":"aGVsbG8="}}}"# + "\n")
        #expect(try settee.run(["--db", db, "get", "a1", "--attachments"], in: directory.url).standardOutput == inline.standardOutput)
        let since = try settee.run(["--db", db, "get", "a1", "--attachments", "--atts-since", "[\"\(rev)\"]"], in: directory.url)
        #expect(since.standardOutput == stub.standardOutput)
        let raw = try settee.run(["--db", db, "attachment", "get", "a1", "x.txt"], in: directory.url)
        #expect(raw.exitStatus == 0 && raw.standardOutput == "hello")
    }

    @Test("attachment put from a file, get to standard output and to a file, delete; errors are JSON")
    func putGetDelete() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let file = directory.file("note.txt", contents: "some text\n")
        let put = try settee.run(["--db", db, "attachment", "put", "d1", "note.txt", file.path], in: directory.url)
        #expect(put.exitStatus == 0, "\(put.standardError)")
        let rev = try #require(try JSONValue(parsing: put.standardOutput)["rev"]?.stringValue)
        let again = try settee.run(["--db", db, "attachment", "put", "d1", "other", file.path], in: directory.url)
        #expect(again.exitStatus == 1)
        #expect(try JSONValue(parsing: again.standardError)["error"] == "conflict", "\(again.standardError)")
        let typed = try settee.run(["--db", db, "attachment", "put", "d1", "raw", file.path, "--rev", rev, "--content-type", "application/x-raw"], in: directory.url)
        #expect(typed.exitStatus == 0, "\(typed.standardError)")
        let rev2 = try #require(try JSONValue(parsing: typed.standardOutput)["rev"]?.stringValue)
        let doc = try JSONValue(parsing: try settee.run(["--db", db, "get", "d1"], in: directory.url).standardOutput)
        #expect(doc["_attachments"]?["note.txt"]?["content_type"] == "text/plain")
        #expect(doc["_attachments"]?["raw"]?["content_type"] == "application/x-raw")
        #expect(try settee.run(["--db", db, "attachment", "get", "d1", "raw"], in: directory.url).standardOutput == "some text\n")
        let out = directory.url.appendingPathComponent("out.txt")
        let saved = try settee.run(["--db", db, "attachment", "get", "d1", "note.txt", "--output", out.path], in: directory.url)
        #expect(saved.exitStatus == 0, "\(saved.standardError)")
        #expect(try String(contentsOf: out, encoding: .utf8) == "some text\n")
        #expect(try JSONValue(parsing: saved.standardOutput)["length"] == 10)
        let deleted = try settee.run(["--db", db, "attachment", "delete", "d1", "raw", "--rev", rev2], in: directory.url)
        #expect(deleted.exitStatus == 0, "\(deleted.standardError)")
        let missing = try settee.run(["--db", db, "attachment", "get", "d1", "raw"], in: directory.url)
        #expect(missing.exitStatus == 1)
        let error = try JSONValue(parsing: missing.standardError)
        #expect(error["error"] == "not_found" && error["reason"] == "Document is missing attachment", "\(missing.standardError)")
        let noFile = try settee.run(["--db", db, "attachment", "put", "d2", "x", directory.url.appendingPathComponent("nope").path], in: directory.url)
        #expect(noFile.exitStatus == 1)
        #expect(noFile.standardError.contains("nope"), "\(noFile.standardError)")
    }

    @Test("A 200 MB attachment is put from a file and got to a file with peak memory under 1.5 times its size plus a constant")
    func largeAttachmentMemory() throws {
        let megabytes = Int(ProcessInfo.processInfo.environment["SETTEE_ATTACHMENT_TEST_MB"] ?? "") ?? 200
        let size = megabytes << 20
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let file = directory.url.appendingPathComponent("big.bin")
        try writePatternFile(file, bytes: size)
        // A process that opens the database and does nothing: what the constant is.
        let baseline = try settee.run(["--db", db, "info"], in: directory.url).peakResidentBytes
        let put = try settee.run(["--db", db, "attachment", "put", "big", "big.bin", file.path], in: directory.url)
        #expect(put.exitStatus == 0, "\(put.standardError)")
        let out = directory.url.appendingPathComponent("out.bin")
        let get = try settee.run(["--db", db, "attachment", "get", "big", "big.bin", "--output", out.path], in: directory.url)
        #expect(get.exitStatus == 0, "\(get.standardError)")
        #expect(try sameFiles(file, out))
        let bound = size + size / 2 + baseline + (32 << 20)
        print("attachments: \(megabytes) MB put peaks at \(put.peakResidentBytes >> 20) MB, get at \(get.peakResidentBytes >> 20) MB (baseline \(baseline >> 20) MB)")
        #expect(put.peakResidentBytes < bound, "put: \(put.peakResidentBytes >> 20) MB")
        #expect(get.peakResidentBytes < bound, "get: \(get.peakResidentBytes >> 20) MB")
    }

    @Test("settee attachment put killed with SIGKILL leaves either the whole attachment or none, and no body nothing refers to")
    func killedDuringAttachmentWrite() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let dbURL = directory.url.appendingPathComponent("db")
        let db = dbURL.path
        let size = 48 << 20
        let files = try (0..<2).map { index in
            let file = directory.url.appendingPathComponent("f\(index).bin")
            try writePatternFile(file, bytes: size, seed: UInt8(index))
            return file
        }
        // How long an unkilled put takes here, so the kills land inside the work.
        let clock = ContinuousClock()
        let start = clock.now
        let timed = try settee.run(["--db", db, "attachment", "put", "timed", "x", files[0].path], in: directory.url)
        #expect(timed.exitStatus == 0, "\(timed.standardError)")
        let milliseconds = max(20, Int((clock.now - start) / .milliseconds(1)))
        var kills = 0
        var landed = 0
        for round in 0..<6 {
            let id = "doc\(round % 2)"
            var arguments = ["--db", db, "attachment", "put", id, "x", files[round % 2].path]
            // After the first write of a document, replace its attachment (the old body must stay or go with it).
            let current = try Database(at: dbURL).document(id)
            if let current { arguments += ["--rev", current.revision.description] }
            let child = try settee.start(arguments, in: directory.url)
            usleep(UInt32(milliseconds * 1000 * (round + 1) / 7))
            child.kill()
            let outcome = try child.wait()
            if outcome.signal == SIGKILL { kills += 1 }
            let database = try Database(at: dbURL)
            #expect(try database.store.attachmentProblems() == [], "round \(round)")
            if try database.document(id) != nil {
                landed += 1
                let out = directory.url.appendingPathComponent("check.bin")
                let blob = try database.writeAttachment("x", of: id, to: out)
                #expect(blob.length == size)
                #expect(try sameFiles(out, files[round % 2]) || sameFiles(out, files[(round + 1) % 2]))
            }
            #expect(try database.verify().problems.isEmpty)
        }
        print("attachments: \(kills) of 6 attachment puts killed mid-way, \(landed) documents found after them (an unkilled one takes \(milliseconds) ms)")
        #expect(kills > 0)
    }
}
