import Foundation
import Testing
import SetteeCore
import SetteeStorage
@testable import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// Bodies stored, and the reference count of the body with `digest` (nil: not stored).
private func storedBodies(_ db: Database, digest: String? = nil) throws -> (bodies: Int, chunks: Int, count: UInt64?) {
    let bodies = try #require(db.store.attachmentBodies)
    return try db.environment.read { transaction in
        let count = try digest.flatMap { try bodies.entry(AttachmentStub.digest(fromText: $0)!, in: transaction)?.count }
        return (try transaction.count(bodies.references), try transaction.count(bodies.chunks), count)
    }
}

private struct Note: Codable {
    var _id: String?
    var _rev: String?
    var text: String
    var _attachments: [String: Blob]?
}

@Suite("Attachments: inline, stubs, shared bodies, streaming")
struct AttachmentTests {
    /// MD5 of "hello", as CouchDB shows it for a type it stores as it is (`application/octet-stream`).
    static let helloDigest = "md5-XUFAKrxLKna5cZ2REBfFkg=="
    /// The digest of "hello" as `text/plain`, which CouchDB stores gzip-encoded
    /// (its digest the MD5 of the gzip bytes): measured with CouchDB 3.5.0.
    static let helloTextDigest = "md5-iMaiC8wqiFlD2NjLTemvCQ=="

    @Test("An inline attachment is stored as a stub with CouchDB's content_type, revpos, digest and length")
    func inlineAttachmentBecomesStub() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let written = try db.put(#"{"_id":"a1","title":"t","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#)
        let document = try #require(try db.document("a1"))
        #expect(document.json == #"{"_id":"a1","_rev":"\#(written.revision)","title":"t","_attachments":{"x.txt":{"content_type":"text/plain","revpos":1,"digest":"\#(Self.helloTextDigest)","length":5,"stub":true}}}"#)
        let blob = try #require(try db.attachment("x.txt", of: "a1"))
        #expect(blob.data == Data("hello".utf8))
        #expect(blob.contentType == "text/plain")
        #expect(blob.digest == Self.helloTextDigest)
        #expect(blob.length == 5)
        #expect(try db.attachment("y.txt", of: "a1") == nil)
        #expect(try db.attachment("x.txt", of: "nobody") == nil)
    }

    @Test("attachments=true inlines the bytes as base64 data; atts_since leaves older ones as stubs")
    func attachmentsTrueAndSince() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let first = try db.put(#"{"_id":"a1","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#)
        let second = try db.put(#"{"_id":"a1","_rev":"\#(first.revision)","_attachments":{"x.txt":{"stub":true},"y.bin":{"data":"AAEC"}}}"#)
        let inline = try #require(try db.document("a1", attachments: true))
        #expect(inline.json == #"{"_id":"a1","_rev":"\#(second.revision)","_attachments":{"x.txt":{"content_type":"text/plain","revpos":1,"digest":"\#(Self.helloTextDigest)","data":"aGVsbG8="},"y.bin":{"content_type":"application/octet-stream","revpos":2,"digest":"md5-uV9n9h67A2GWIteY9F/C0w==","data":"AAEC"}}}"#)
        let since = try #require(try db.document("a1", attachments: true, since: [first.revision]))
        let attachments = try #require(try since.value["_attachments"])
        #expect(attachments["x.txt"]?["stub"] == true)
        #expect(attachments["y.bin"]?["data"] == "AAEC")
        #expect(try db.document("a1", attachments: false) == db.document("a1"))
    }

    @Test("An edit that sends stubs keeps the attachments; one without _attachments drops them")
    func stubEditsKeepAttachments() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let first = try db.put(#"{"_id":"a1","v":1,"_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#)
        let second = try db.put(#"{"_id":"a1","_rev":"\#(first.revision)","v":2,"_attachments":{"x.txt":{"content_type":"text/plain","revpos":1,"digest":"\#(Self.helloTextDigest)","length":5,"stub":true}}}"#)
        #expect(try db.attachment("x.txt", of: "a1")?.data == Data("hello".utf8))
        #expect(try db.document("a1")?.value["_attachments"]?["x.txt"]?["revpos"] == 1)
        #expect(try storedBodies(db, digest: Self.helloTextDigest).count == 1)
        _ = try db.put(#"{"_id":"a1","_rev":"\#(second.revision)","v":3}"#)
        #expect(try db.attachment("x.txt", of: "a1") == nil)
        #expect(try db.document("a1")?.value["_attachments"] == nil)
        let counts = try storedBodies(db)
        #expect(counts.bodies == 0 && counts.chunks == 0, "the body nothing refers to is removed")
    }

    @Test("A stub naming an attachment the current revision lacks is CouchDB's missing_stub")
    func missingStub() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let error = try #require(throws: DocumentError.self) {
            try db.put(#"{"_id":"a1","_attachments":{"x.txt":{"stub":true}}}"#)
        }
        #expect(error.code == .missingStub)
        #expect(error.reason == "Invalid attachment stub in a1 for x.txt")
        #expect(error.errorCode == .missingStub)
        let first = try db.put(#"{"_id":"a1","_attachments":{"x.txt":{"data":"aGVsbG8="}}}"#)
        let wrongRevpos = try #require(throws: DocumentError.self) {
            try db.put(#"{"_id":"a1","_rev":"\#(first.revision)","_attachments":{"x.txt":{"stub":true,"revpos":7}}}"#)
        }
        #expect(wrongRevpos.code == .missingStub)
        let bad = try #require(throws: DocumentError.self) {
            try db.put(#"{"_id":"a2","_attachments":{"x.txt":{"data":"not base64!"}}}"#)
        }
        #expect(bad.reason == "Invalid attachment data for x.txt")
        let underscore = try #require(throws: DocumentError.self) {
            try db.put(#"{"_id":"a2","_attachments":{"_x":{"data":"AAEC"}}}"#)
        }
        #expect(underscore.code == .badRequest)
        #expect(try db.document("a2") == nil)
    }

    @Test("Equal bytes are stored once across documents and revisions, and removed with the last reference")
    func deduplicatedAndRemovedWhenUnreferenced() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let a = try db.put(#"{"_id":"a","_attachments":{"x.txt":{"data":"aGVsbG8="},"copy.txt":{"data":"aGVsbG8="}}}"#)
        let b = try db.put(#"{"_id":"b","_attachments":{"y.txt":{"data":"aGVsbG8="}}}"#)
        var stored = try storedBodies(db, digest: Self.helloDigest)
        #expect(stored.bodies == 1 && stored.chunks == 1 && stored.count == 3)
        try db.delete("a", revision: a.revision)
        stored = try storedBodies(db, digest: Self.helloDigest)
        #expect(stored.bodies == 1 && stored.count == 1)
        #expect(try db.attachment("y.txt", of: "b")?.data == Data("hello".utf8))
        try db.removeAttachment("y.txt", of: "b", revision: b.revision)
        stored = try storedBodies(db)
        #expect(stored.bodies == 0 && stored.chunks == 0)
        #expect(try db.document("b")?.json.contains("_attachments") == false)
    }

    @Test("A failed write stores no body: the transaction rolls back with the conflict")
    func conflictStoresNothing() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        _ = try db.put(#"{"_id":"a","v":1}"#)
        #expect(throws: DocumentError.self) {
            try db.put(#"{"_id":"a","_attachments":{"x.txt":{"data":"aGVsbG8="}}}"#)
        }
        #expect(try storedBodies(db).bodies == 0)
    }

    @Test("Map functions see _attachments stubs, without data")
    func mapFunctionsSeeStubs() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id":"_design/att","views":{"stubs":{"map":"function (doc) { for (var name in doc._attachments) { var a = doc._attachments[name]; emit(name, [a.content_type, a.length, a.stub, a.digest, typeof a.data]); } }"}}}"#)
        try db.put(#"{"_id":"a1","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#)
        let result = try db.query("att/stubs", options: ViewQueryOptions(parameters: []))
        #expect(result.rows.map(\.keyJSON) == [#""x.txt""#])
        #expect(result.rows.map(\.valueJSON) == [#"["text/plain",5,true,"\#(Self.helloTextDigest)","undefined"]"#])
    }

    @Test("putAttachment adds to a document, keeps its members, and streams a file; removeAttachment takes one away")
    func putAndRemoveAttachment() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let created = try db.putAttachment(Blob(data: Data("hello".utf8), contentType: "text/plain"), named: "x.txt", of: "new", revision: nil)
        #expect(created.revision.generation == 1)
        let doc = try db.put(#"{"_id":"d","title":"kept"}"#)
        var bytes = [UInt8](repeating: 0, count: 3 * AttachmentBodies.chunkBytes + 12345)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 11) }
        let file = directory.url.appendingPathComponent("big.bin")
        try Data(bytes).write(to: file)
        let withFile = try db.putAttachment(Blob(file: file, contentType: "application/x-test"), named: "big.bin", of: "d", revision: doc.revision)
        let conflict = try #require(throws: DocumentError.self) {
            try db.putAttachment(Blob(data: Data([1])), named: "one", of: "d", revision: doc.revision)
        }
        #expect(conflict.code == .conflict)
        #expect(try db.document("d")?.value["title"] == "kept")
        let read = try #require(try db.attachment("big.bin", of: "d"))
        #expect(read.data == Data(bytes))
        #expect(read.revpos == 2 && read.length == bytes.count && read.contentType == "application/x-test")
        #expect(try storedBodies(db).chunks == 1 + 4)
        let out = directory.url.appendingPathComponent("out.bin")
        try db.writeAttachment("big.bin", of: "d", to: out)
        #expect(try Data(contentsOf: out) == Data(bytes))
        let removed = try db.removeAttachment("big.bin", of: "d", revision: withFile.revision)
        #expect(try db.attachment("big.bin", of: "d") == nil)
        #expect(try storedBodies(db).chunks == 1)
        let missing = try #require(throws: DocumentError.self) { try db.removeAttachment("big.bin", of: "d", revision: removed.revision) }
        #expect(missing.code == .notFound && missing.reason == "Document is missing attachment")
    }

    @Test("A Blob is a Codable document's attachment: put with data, read back as a stub, kept when put again")
    func codableBlob() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let written = try db.put(Note(text: "hi", _attachments: ["photo.png": Blob(data: Data([1, 2, 3]), contentType: "image/png")]), id: "n1")
        var note = try #require(try db.get("n1", as: Note.self))
        let stub = try #require(note._attachments?["photo.png"])
        #expect(stub.content == .stored && stub.length == 3 && stub.revpos == 1 && stub.contentType == "image/png")
        note.text = "edited"
        let edited = try db.put(note, id: "n1", revision: written.revision)
        #expect(edited.revision.generation == 2)
        #expect(try db.attachment("photo.png", of: "n1")?.data == Data([1, 2, 3]))
        #expect(try db.get("n1", as: Note.self)?.text == "edited")
    }

    @Test("Attachments survive reopening the database")
    func survivesReopen() throws {
        let directory = TemporaryDirectory()
        do {
            let db = try openDatabase(directory)
            try db.put(#"{"_id":"a1","_attachments":{"x.txt":{"data":"aGVsbG8="}}}"#)
        }
        let db = try openDatabase(directory)
        #expect(try db.attachment("x.txt", of: "a1")?.data == Data("hello".utf8))
        #expect(try db.verify().problems.isEmpty)
    }
}

@Suite("Attachments: what is stored by digest is checked")
struct AttachmentDigestTests {
    @Test("Bytes whose digest is already stored are compared with the stored ones before they share them")
    func equalDigestsMustMeanEqualBytes() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id":"a","_attachments":{"x.txt":{"data":"aGVsbG8="}}}"#)
        let bodies = try #require(db.store.attachmentBodies)
        let digest = try #require(AttachmentStub.digest(fromText: AttachmentTests.helloDigest))
        // Another body of the same length under the same digest: what an MD5 collision would look like.
        let forged = AttachmentEdit(name: "y.txt", contentType: "text/plain", content: .new(.bytes(Data("jello".utf8)), digest: digest, length: 5))
        let error = try #require(throws: DocumentError.self) {
            try db.store.putAttachment(forged, of: "b", revision: nil)
        }
        #expect(error.reason.contains("MD5 collision"), "\(error.reason)")
        #expect(try db.attachment("x.txt", of: "a")?.data == Data("hello".utf8))
        #expect(try db.document("b") == nil)
        _ = bodies
        let report = try db.verify()
        #expect(report.problems.isEmpty, "\(report.problems)")
    }

    @Test("verify reports a body that nothing refers to")
    func verifyFindsOrphans() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let bodies = try #require(db.store.attachmentBodies)
        try db.environment.write { transaction in
            try bodies.retain(MD5.hash(Array("orphan".utf8)), count: 1, length: 6, source: .bytes(Data("orphan".utf8)), name: "o", in: transaction)
        }
        let problems = try db.verify().problems
        #expect(problems.contains { $0.contains("referred to by no document") }, "\(problems)")
    }
}

@Suite("Attachments and validate_doc_update")
struct AttachmentValidationTests {
    @Test("validate_doc_update sees newDoc's _attachments as stubs, new ones and kept ones, and can refuse them")
    func validationSeesStubs() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id":"_design/rules","validate_doc_update":"function (newDoc, oldDoc) { var a = newDoc._attachments || {}; for (var name in a) { if (!a[name].stub || a[name].data !== undefined) throw {forbidden: 'not a stub: ' + name}; if (a[name].length > 5) throw {forbidden: name + ' is ' + a[name].length + ' bytes'}; } if (oldDoc && oldDoc._attachments && !newDoc._attachments) throw {forbidden: 'attachments may not be dropped'}; }"}"#)
        let first = try db.put(#"{"_id":"a","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#)
        let refused = try #require(throws: DocumentError.self) {
            try db.putAttachment(Blob(data: Data("too long".utf8)), named: "y", of: "a", revision: first.revision)
        }
        #expect(refused.code == .forbidden && refused.reason == "y is 8 bytes")
        let dropped = try #require(throws: DocumentError.self) { try db.put(#"{"_id":"a","_rev":"\#(first.revision)"}"#) }
        #expect(dropped.reason == "attachments may not be dropped")
        let kept = try db.put(#"{"_id":"a","_rev":"\#(first.revision)","v":2,"_attachments":{"x.txt":{"stub":true}}}"#)
        #expect(kept.revision.generation == 2)
        #expect(try storedBodies(db).bodies == 1, "the refused writes stored nothing")
    }
}

@Suite("Attachments through imports and batches")
struct AttachmentImportTests {
    @Test("Imported documents and batch writes store their inline attachments, sharing equal bytes")
    func importAndBatch() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let lines = (0..<3).map { #"{"_id":"i\#($0)","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"# }
        let report = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        #expect(report.imported == 3 && report.rejected.isEmpty)
        try db.write { batch in
            try batch.put(#"{"_id":"w1","_attachments":{"x.txt":{"data":"aGVsbG8="}}}"#)
        }
        #expect(try storedBodies(db, digest: AttachmentTests.helloTextDigest).count == 3)   // text/plain: stored gzip-encoded
        #expect(try storedBodies(db, digest: AttachmentTests.helloDigest).count == 1)
        #expect(try db.attachment("x.txt", of: "i2")?.data == Data("hello".utf8))
        #expect(try db.attachment("x.txt", of: "w1")?.data == Data("hello".utf8))
        #expect(try db.verify().problems.isEmpty)
    }
}

@Suite("Attachments from files that change")
struct AttachmentFileChangeTests {
    @Test("A file that changes between its hashing and its storing is refused, and nothing is stored")
    func fileChangedWhileStored() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let file = directory.file("f.txt", contents: "first")
        // A type stored as it is: a compressible one is compressed into a copy first.
        let attachment = try AttachmentEdit(name: "f.txt", contentType: "application/octet-stream", file: file)
        try Data("second, longer".utf8).write(to: file)
        let error = try #require(throws: DocumentError.self) { try db.store.putAttachment(attachment, of: "d", revision: nil) }
        #expect(error.reason.contains("changed while they were stored"), "\(error.reason)")
        #expect(try db.document("d") == nil)
        #expect(try storedBodies(db).bodies == 0 && storedBodies(db).chunks == 0)
    }
}
