import Foundation
import Testing
import Settee
import SetteeCore

@Suite("settee serve: attachments over HTTP, as CouchDB 3.5 serves them")
struct ServerAttachmentTests {
    /// Every byte value, `count` bytes in a pattern that does not repeat at 1 MiB.
    static func binary(_ count: Int) -> Data {
        Data((0 ..< count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 251) })
    }

    static func md5Base64(_ data: Data) -> String {
        Data(data.withUnsafeBytes { MD5.hash($0) }).base64EncodedString()
    }

    @Test("An attachment is put with a revision, read back byte for byte with CouchDB's headers, and deleted")
    func roundTrip() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let rev1 = try #require(try await server.request("PUT", "/db/doc", json: ["a": 1]).json["rev"]?.stringValue)
        let bytes = Self.binary(1000)

        let put = try await server.request("PUT", "/db/doc/photos/a%20b.png?rev=\(rev1)", body: bytes, headers: ["Content-Type": "image/png"])
        #expect(put.status == 201)
        let rev2 = try #require(put.json["rev"]?.stringValue)
        #expect(put.json == ["ok": true, "id": "doc", "rev": .string(rev2)])
        #expect(rev2.hasPrefix("2-"))
        #expect(put.header("Location") == "\(server.base)/db/doc/photos%2Fa%20b.png", "an absolute URL, as CouchDB's")

        let read = try await server.request("GET", "/db/doc/photos/a%20b.png")
        #expect(read.status == 200)
        #expect(read.body == bytes)
        #expect(read.header("Content-Type") == "image/png")
        #expect(read.header("Content-Length") == "1000")
        #expect(read.header("ETag") == "\"\(Self.md5Base64(bytes))\"")
        #expect(read.header("Content-MD5") == Self.md5Base64(bytes))
        #expect(read.header("Accept-Ranges") == "bytes")
        #expect(read.header("Content-Security-Policy") == "sandbox")

        let head = try await server.request("HEAD", "/db/doc/photos/a%20b.png")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("Content-Length") == "1000")
        #expect(head.header("Content-Type") == "image/png")

        let document = try await server.request("GET", "/db/doc")
        #expect(document.json["_attachments"] == [
            "photos/a b.png": ["content_type": "image/png", "revpos": 2, "digest": .string("md5-" + Self.md5Base64(bytes)),
                               "length": 1000, "stub": true],
        ])
        let inline = try await server.request("GET", "/db/doc?attachments=true")
        #expect(inline.json["_attachments"]?["photos/a b.png"]?["data"] == .string(bytes.base64EncodedString()))
        let since2 = try await server.request("GET", "/db/doc?atts_since=%5B%22\(rev2)%22%5D")
        #expect(since2.json["_attachments"]?["photos/a b.png"]?["stub"] == true)
        let since1 = try await server.request("GET", "/db/doc?atts_since=%5B%22\(rev1)%22%5D")
        #expect(since1.json["_attachments"]?["photos/a b.png"]?["data"] == .string(bytes.base64EncodedString()))

        let noRevision = try await server.request("PUT", "/db/doc/other.txt", body: Data("x".utf8))
        #expect(noRevision.status == 409)
        #expect(noRevision.json == ["error": "conflict", "reason": "Document update conflict."])
        let deleteWithoutRevision = try await server.request("DELETE", "/db/doc/photos/a%20b.png")
        #expect(deleteWithoutRevision.status == 409)
        let stale = try await server.request("DELETE", "/db/doc/photos/a%20b.png?rev=\(rev1)")
        #expect(stale.status == 409)
        let deleted = try await server.request("DELETE", "/db/doc/photos/a%20b.png?rev=\(rev2)")
        #expect(deleted.status == 200)
        #expect(deleted.json["ok"] == true)
        #expect(deleted.json["rev"]?.stringValue?.hasPrefix("3-") == true)

        let gone = try await server.request("GET", "/db/doc/photos/a%20b.png")
        #expect(gone.status == 404)
        #expect(gone.json == ["error": "not_found", "reason": "Document is missing attachment"])
        let missingDocument = try await server.request("GET", "/db/nobody/a.txt")
        #expect(missingDocument.status == 404)
        #expect(missingDocument.json == ["error": "not_found", "reason": "missing"])
        await server.stop()
    }

    @Test("An attachment put without a revision creates its document; a revision for a missing document is not found")
    func newDocument() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let created = try await server.request("PUT", "/db/fresh/notes.txt", body: Data("hello".utf8), headers: ["Content-Type": "text/plain"])
        #expect(created.status == 201)
        #expect(created.json["rev"]?.stringValue?.hasPrefix("1-") == true)
        let read = try await server.request("GET", "/db/fresh/notes.txt")
        #expect(String(decoding: read.body, as: UTF8.self) == "hello")
        #expect(read.header("Content-Type") == "text/plain")

        let missing = try await server.request("PUT", "/db/nobody/notes.txt?rev=1-0123456789abcdef0123456789abcdef", body: Data("x".utf8))
        #expect(missing.status == 404)
        #expect(missing.json == ["error": "not_found", "reason": "missing"])
        let underscore = try await server.request("PUT", "/db/fresh/_hidden?rev=\(created.json["rev"]!.stringValue!)", body: Data("x".utf8))
        #expect(underscore.status == 400)
        #expect(underscore.json == ["error": "bad_request", "reason": "Attachment name '_hidden' starts with prohibited character '_'"])
        let gzip = try await server.request("PUT", "/db/other/a.txt", body: Data("abc".utf8), headers: ["Content-Encoding": "deflate"])
        #expect(gzip.status == 415)
        #expect(gzip.json == ["error": "bad_content_type", "reason": "Only gzip and identity content-encodings are supported"])
        let corrupt = try await server.request("PUT", "/db/other/a.txt", body: Data("abc".utf8), headers: ["Content-MD5": Self.md5Base64(Data("xyz".utf8))])
        #expect(corrupt.status == 400)
        #expect(corrupt.json == ["error": "content_md5_mismatch", "reason": "Possible message corruption."])
        await server.stop()
    }

    @Test("A 3 MB attachment streams in and out whole; ranges read across chunks; If-None-Match gives 304; a range past the end 416")
    func largeAndRanges() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let bytes = Self.binary(3 * 1024 * 1024 + 17)
        let put = try await server.request("PUT", "/db/big/blob.bin", body: bytes, headers: ["Content-Type": "application/octet-stream"])
        #expect(put.status == 201)
        let read = try await server.request("GET", "/db/big/blob.bin")
        #expect(read.status == 200)
        #expect(read.body.count == bytes.count)
        #expect(read.body == bytes)

        let across = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=1048570-1048585"])
        #expect(across.status == 206)
        #expect(across.body == bytes[1_048_570 ... 1_048_585])
        #expect(across.header("Content-Range") == "bytes 1048570-1048585/\(bytes.count)")
        #expect(across.header("Content-Length") == "16")

        let suffix = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=-10"])
        #expect(suffix.status == 206)
        #expect(suffix.body == bytes.suffix(10))
        let open = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=3145720-"])
        #expect(open.body == bytes[3_145_720...])
        let clamped = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=3145727-99999999"])
        #expect(clamped.body == bytes[3_145_727...])
        let whole = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=0-"])
        #expect(whole.status == 200)

        let multiple = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=0-1,10-12"])
        #expect(multiple.status == 206)
        let type = try #require(multiple.header("Content-Type"))
        #expect(type.hasPrefix("multipart/byteranges; boundary=\""))
        let boundary = String(type.split(separator: "\"")[1])
        var expected = Data("--\(boundary)\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 0-1/\(bytes.count)\r\n\r\n".utf8)
        expected += bytes[0 ... 1]
        expected += Data("\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 10-12/\(bytes.count)\r\n\r\n".utf8)
        expected += bytes[10 ... 12]
        expected += Data("\r\n--\(boundary)--".utf8)
        #expect(multiple.body == expected)

        let backwards = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=20-10"])
        #expect(backwards.status == 416)
        #expect(backwards.json == ["error": "requested_range_not_satisfiable", "reason": "Requested range not satisfiable"])
        let past = try await server.request("GET", "/db/big/blob.bin", headers: ["Range": "bytes=99999999-"])
        #expect(past.status == 416)

        let etag = try #require(read.header("ETag"))
        let cached = try await server.request("GET", "/db/big/blob.bin", headers: ["If-None-Match": etag])
        #expect(cached.status == 304)
        #expect(cached.body.isEmpty)
        #expect(cached.header("ETag") == etag)
        await server.stop()
    }

    @Test("Documents carry inline base64 attachments in PUT and _bulk_docs; stubs keep them; design documents have attachments too")
    func inlineAttachments() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let hello = Data("hello".utf8).base64EncodedString()
        let created = try await server.request("PUT", "/db/note", json: [
            "title": "n", "_attachments": ["a.txt": ["content_type": "text/plain", "data": .string(hello)]],
        ])
        #expect(created.status == 201)
        let rev1 = try #require(created.json["rev"]?.stringValue)
        #expect(String(decoding: try await server.request("GET", "/db/note/a.txt").body, as: UTF8.self) == "hello")

        let stub = try await server.request("GET", "/db/note").json
        let kept = try await server.request("PUT", "/db/note", json: [
            "_rev": .string(rev1), "title": "n2", "_attachments": try #require(stub["_attachments"]),
        ])
        #expect(kept.status == 201)
        let after = try await server.request("GET", "/db/note").json
        #expect(after["title"] == "n2")
        #expect(after["_attachments"]?["a.txt"]?["revpos"] == 1)
        #expect(String(decoding: try await server.request("GET", "/db/note/a.txt").body, as: UTF8.self) == "hello")

        let bulk = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [
            ["_id": "b1", "_attachments": ["x.bin": ["content_type": "application/octet-stream",
                                                     "data": .string(Self.binary(300).base64EncodedString())]]],
        ]])
        #expect(bulk.status == 201)
        #expect(try await server.request("GET", "/db/b1/x.bin").body == Self.binary(300))

        let design = try await server.request("PUT", "/db/_design/app", json: ["views": [:]])
        let designRev = try #require(design.json["rev"]?.stringValue)
        let designPut = try await server.request("PUT", "/db/_design/app/static/readme.txt?rev=\(designRev)",
                                                 body: Data("read me".utf8), headers: ["Content-Type": "text/plain"])
        #expect(designPut.status == 201)
        let designRead = try await server.request("GET", "/db/_design/app/static/readme.txt")
        #expect(String(decoding: designRead.body, as: UTF8.self) == "read me")
        await server.stop()
    }

    @Test("A multipart/related PUT stores the document and the attachments that follow it; GET with Accept: multipart/related sends them back")
    func multipart() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let big = Self.binary(1_048_576 + 5)
        let boundary = "abc123"
        var body = Data("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8)
        body += Data(#"{"title":"two files","_attachments":{"a.txt":{"follows":true,"content_type":"text/plain","length":5},"b.bin":{"follows":true,"content_type":"application/octet-stream","length":1048581}}}"#.utf8)
        body += Data("\r\n--\(boundary)\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\n\r\n".utf8)
        body += Data("hello".utf8)
        body += Data("\r\n--\(boundary)\r\n\r\n".utf8)
        body += big
        body += Data("\r\n--\(boundary)--".utf8)
        let put = try await server.request("PUT", "/db/mp", body: body, headers: ["Content-Type": "multipart/related; boundary=\"\(boundary)\""])
        #expect(put.status == 201)
        let rev = try #require(put.json["rev"]?.stringValue)
        #expect(String(decoding: try await server.request("GET", "/db/mp/a.txt").body, as: UTF8.self) == "hello")
        #expect(try await server.request("GET", "/db/mp/b.bin").body == big)
        #expect(try await server.request("GET", "/db/mp").json["title"] == "two files")

        let read = try await server.request("GET", "/db/mp?attachments=true", headers: ["Accept": "multipart/related"])
        #expect(read.status == 200)
        let type = try #require(read.header("Content-Type"))
        #expect(type.hasPrefix("multipart/related; boundary=\""))
        let sent = String(type.split(separator: "\"")[1])
        #expect(read.header("Content-Length") == String(read.body.count))
        let head = Data("--\(sent)\r\nContent-Type: application/json\r\n\r\n".utf8)
        #expect(read.body.prefix(head.count) == head)
        let json = try #require(String(data: read.body[head.count...].prefix { $0 != UInt8(ascii: "\r") }, encoding: .utf8))
        let document = try JSONValue(parsing: json)
        #expect(document["_rev"] == .string(rev))
        #expect(document["_attachments"]?["a.txt"]?["follows"] == true)
        #expect(document["_attachments"]?["b.bin"]?["length"] == 1_048_581)
        var expected = head + Data(json.utf8)
        expected += Data("\r\n--\(sent)\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello\r\n--\(sent)".utf8)
        expected += Data("\r\nContent-Disposition: attachment; filename=\"b.bin\"\r\nContent-Type: application/octet-stream\r\nContent-Length: 1048581\r\n\r\n".utf8)
        expected += big + Data("\r\n--\(sent)--".utf8)
        #expect(read.body == expected)

        let since = try await server.request("GET", "/db/mp?atts_since=%5B%22\(rev)%22%5D", headers: ["Accept": "multipart/related"])
        #expect(since.header("Content-Type") == "application/json")
        #expect(since.json["_attachments"]?["a.txt"]?["stub"] == true)

        let mismatch = try await server.request("PUT", "/db/mp2", body: Data("--b\r\n\r\n{\"_attachments\":{\"x\":{\"follows\":true}}}\r\n--b--".utf8),
                                                headers: ["Content-Type": "multipart/related; boundary=b"])
        #expect(mismatch.status == 400)
        await server.stop()
    }
}
