import Foundation
import Testing
@testable import SetteeCore
import Settee
import SetteeStorage

/// Attachments of compressible types (`text/*`, JSON, JavaScript, XML) are
/// stored gzip-encoded as CouchDB stores them — level 8, their digest the
/// MD5 of the gzip bytes — so that digests and revision ids are CouchDB's;
/// every read gives the bytes themselves, and a client that takes gzip gets
/// them encoded. The expected digests and revisions are CouchDB 3.5.0's,
/// measured on this machine.
@Suite("Compressible attachments stored gzip-encoded, as CouchDB stores them")
struct CompressedAttachmentTests {
    @Test("A text attachment gets CouchDB's digest and revision; every read gives its bytes; verify agrees")
    func storedEncoded() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let put = try db.put(#"{"_id":"d","_attachments":{"a.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#)
        #expect(put.revision.description == "1-2c13af7bc89e7804203dd6bc778549ac")
        #expect(try db.document("d")?.json.contains(#""digest":"md5-iMaiC8wqiFlD2NjLTemvCQ==","length":5,"stub":true"#) == true)
        #expect(try db.attachment("a.txt", of: "d")?.data == Data("hello".utf8))
        #expect(try db.document("d", attachments: true)?.json.contains(#""data":"aGVsbG8=""#) == true)
        // A large text from a file: several chunks, compressed, read back whole.
        var random = SplitMix64(seed: 7)
        let words = ["settee", "couch", "view", "index", "replica", "document"]
        var text = ""
        while text.utf8.count < 3_000_000 { text += words[Int(random.next() % 6)] + " " }
        let file = directory.file("big.txt", contents: text)
        let written = try db.putAttachment(Blob(file: file, contentType: "text/plain; charset=utf-8"), named: "big.txt", of: "d", revision: put.revision)
        let blob = try #require(try db.attachment("big.txt", of: "d"))
        #expect(blob.data == Data(text.utf8))
        #expect(blob.length == text.utf8.count)
        let encoded = Gzip.compress(Array(text.utf8))
        #expect(blob.digest == "md5-" + Data(MD5.hash(encoded)).base64EncodedString())
        var streamed = Data()
        _ = try db.readAttachment("big.txt", of: "d") { streamed.append(contentsOf: $0) }
        #expect(streamed == Data(text.utf8))
        #expect(try db.document("d", revision: written.revision, attachments: true)?.value["_attachments"]?["big.txt"]?["data"]
                == .string(Data(text.utf8).base64EncodedString()))
        #expect(try db.verify().problems.isEmpty)
        // Binary types are stored as they are.
        _ = try db.put(#"{"_id":"b","_attachments":{"x.bin":{"content_type":"application/octet-stream","data":"aGVsbG8="}}}"#)
        #expect(try db.document("b")?.json.contains("md5-XUFAKrxLKna5cZ2REBfFkg==") == true)
    }

    @Test("Over HTTP: CouchDB's revision and ETag; inflated, or gzip for a client that takes it; ranges answered whole")
    func servedEncoded() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let put = try await server.request("PUT", "/db/rt/a.txt", body: Data("0123456789".utf8), headers: ["Content-Type": "text/plain"])
        #expect(put.json["rev"] == "1-1445e1393e86eccfd4668fdbb21269ca")
        let plain = try await server.request("GET", "/db/rt/a.txt")
        #expect(plain.status == 200)
        #expect(String(decoding: plain.body, as: UTF8.self) == "0123456789")
        #expect(plain.header("ETag") == #""AYLupyG4Tboyi1p365vBsw==""#)
        #expect(plain.header("Accept-Ranges") == "none")
        let ranged = try await server.request("GET", "/db/rt/a.txt", headers: ["Range": "bytes=5-"])
        #expect(ranged.status == 200)
        #expect(String(decoding: ranged.body, as: UTF8.self) == "0123456789")
        #expect(try await server.request("GET", "/db/rt/a.txt", headers: ["Range": "bytes=50-60"]).status == 416)
        // A client that does not take gzip gets the bytes inflated; one that does, the stored bytes
        // (URLSession asks for gzip and inflates: read raw).
        let identity = try RawConnection(port: server.port)
        #expect(identity.send("GET /db/rt/a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
        let identityReply = await identity.receive(for: 5).text
        #expect(!identityReply.lowercased().contains("content-encoding"))
        #expect(identityReply.hasSuffix("\r\n\r\n0123456789"))
        let connection = try RawConnection(port: server.port)
        #expect(connection.send("GET /db/rt/a.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"))
        let raw = await connection.receive(for: 5).text.lowercased()
        #expect(raw.contains("content-encoding: gzip"))
        #expect(raw.contains("content-length: 30"))
        let doc = try await server.request("GET", "/db/rt?attachments=true")
        #expect(doc.json["_attachments"]?["a.txt"]?["data"] == .string(Data("0123456789".utf8).base64EncodedString()))
    }
}
