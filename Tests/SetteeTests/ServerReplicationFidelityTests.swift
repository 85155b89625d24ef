import Foundation
import Testing
import Settee
import SetteeCore

/// What CouchDB's replicator sends a target and reads from a source, and
/// what it must find unchanged: checkpoints written again and again,
/// attachments' `revpos`, numbers exactly as sent.
@Suite("settee serve: what replication writes arrives unchanged")
struct ServerReplicationFidelityTests {
    @Test("A replication checkpoint is written again with _revisions {start: 0} (PUT and _bulk_docs new_edits=false), as CouchDB takes it")
    func checkpointsWrittenAgain() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let first = try await server.request("PUT", "/db/_local/cp", json: ["_id": "_local/cp", "session_id": "s1", "source_last_seq": 10])
        #expect(first.status == 201)
        #expect(first.json["rev"] == "0-1")
        // What CouchDB's replicator sends for its second checkpoint.
        let second = try await server.request("PUT", "/db/_local/cp", json: [
            "_id": "_local/cp", "_rev": "0-1", "_revisions": ["start": 0, "ids": ["1"]], "session_id": "s1", "source_last_seq": 20,
        ])
        #expect(second.status == 201, "\(second.json.jsonText)")
        #expect(second.json["rev"] == "0-2")
        #expect(try await server.request("GET", "/db/_local/cp").json["source_last_seq"] == 20)
        // The same through _bulk_docs with new_edits=false: written as it comes.
        let bulk = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "_local/cp", "_rev": "0-2", "_revisions": ["start": 0, "ids": ["2"]], "source_last_seq": 30],
            ["_id": "_local/other", "_rev": "0-7", "source_last_seq": 1],
        ]])
        #expect(bulk.status == 201, "\(bulk.json.jsonText)")
        let checkpoint = try await server.request("GET", "/db/_local/cp")
        #expect(checkpoint.json["source_last_seq"] == 30)
        #expect(checkpoint.json["_rev"] == "0-3")
        #expect(try await server.request("GET", "/db/_local/other").json["source_last_seq"] == 1)
        // Local documents still replicate nowhere: not in _changes or _all_docs.
        #expect(try await server.request("GET", "/db/_all_docs").json["rows"] == [])
        // A plain document's _revisions still start at 1.
        let plain = try await server.request("PUT", "/db/d?new_edits=false", json: [
            "_id": "d", "_rev": .string("1-" + String(repeating: "a", count: 32)), "_revisions": ["start": 0, "ids": ["x"]],
        ])
        #expect(plain.status == 400)
    }
}

extension ServerReplicationFidelityTests {
    @Test("A replicated write keeps the revpos its sender gives new attachment bytes, inline and multipart; an edit gives its own generation")
    func revposKept() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let rev3 = "3-" + String(repeating: "c", count: 32)
        let revisions: JSONValue = ["start": 3, "ids": [.string(String(repeating: "c", count: 32)), .string(String(repeating: "b", count: 32)),
                                                        .string(String(repeating: "a", count: 32))]]
        let inline = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [[
            "_id": "inline", "_rev": .string(rev3), "_revisions": revisions,
            "_attachments": ["a.txt": ["content_type": "text/plain", "revpos": 2, "data": "aGVsbG8="]],
        ]]])
        #expect(inline.status == 201)
        #expect(try await server.request("GET", "/db/inline").json["_attachments"]?["a.txt"]?["revpos"] == 2)
        let json: JSONValue = ["_id": "parts", "_rev": .string(rev3), "_revisions": revisions,
                               "_attachments": ["b.bin": ["content_type": "application/octet-stream", "revpos": 1, "follows": true, "length": 3]]]
        let body = Data("--xyz\r\nContent-Type: application/json\r\n\r\n\(json.jsonText)\r\n--xyz\r\n\r\nabc\r\n--xyz--".utf8)
        let multipart = try await server.request("PUT", "/db/parts?new_edits=false", body: body,
                                                 headers: ["Content-Type": "multipart/related; boundary=\"xyz\""])
        #expect(multipart.status == 201, "\(multipart.json.jsonText)")
        #expect(try await server.request("GET", "/db/parts").json["_attachments"]?["b.bin"]?["revpos"] == 1)
        // An edit of its own: the new generation, whatever revpos it names.
        let edited = try await server.request("PUT", "/db/own", json: ["_attachments": ["c.txt": ["content_type": "text/plain", "revpos": 7, "data": "aGk="]]])
        #expect(edited.status == 201)
        #expect(try await server.request("GET", "/db/own").json["_attachments"]?["c.txt"]?["revpos"] == 1)
    }
}

extension ServerReplicationFidelityTests {
    static let numbers = #""a":9007199254740993,"b":12345678901234567890,"c":1.0,"d":[2.50,-0.0,1e3],"e":{"f":123456789012345678901234567890}"#

    /// Whether `body` holds every number of ``numbers`` as it was sent.
    static func holdsNumbers(_ body: Data) -> Bool {
        String(decoding: body, as: UTF8.self).contains(numbers)
    }

    @Test("Numbers arrive as sent on every HTTP write path and read back so everywhere; revision ids are CouchDB's")
    func numbersExact() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let json = ["Content-Type": "application/json"]
        #expect(try await server.request("PUT", "/db/put", body: Data("{\(Self.numbers)}".utf8), headers: json).status == 201)
        #expect(try await server.request("POST", "/db", body: Data(#"{"_id":"post",\#(Self.numbers)}"#.utf8), headers: json).status == 201)
        #expect(try await server.request("POST", "/db/_bulk_docs", body: Data(#"{"docs":[{"_id":"bulk",\#(Self.numbers)}]}"#.utf8), headers: json).status == 201)
        let replicated = #"{"docs":[{"_id":"replicated","_rev":"1-\#(String(repeating: "a", count: 32))",\#(Self.numbers)}],"new_edits":false}"#
        #expect(try await server.request("POST", "/db/_bulk_docs", body: Data(replicated.utf8), headers: json).status == 201)
        let part = Data("--xyz\r\nContent-Type: application/json\r\n\r\n{\(Self.numbers)}\r\n--xyz--".utf8)
        #expect(try await server.request("PUT", "/db/multipart", body: part, headers: ["Content-Type": "multipart/related; boundary=\"xyz\""]).status == 201)
        for id in ["put", "post", "bulk", "replicated", "multipart"] {
            #expect(Self.holdsNumbers(try await server.request("GET", "/db/\(id)").body), "\(id)")
        }
        for path in ["/db/_all_docs?include_docs=true", "/db/_changes?include_docs=true"] {
            let body = String(decoding: try await server.request("GET", path).body, as: UTF8.self)
            #expect(body.components(separatedBy: Self.numbers).count == 6, "\(path)")
        }
        let found = try await server.request("POST", "/db/_find", body: Data(#"{"selector":{"c":1}}"#.utf8), headers: json)
        #expect(String(decoding: found.body, as: UTF8.self).components(separatedBy: Self.numbers).count == 6)
        // CouchDB's revision id for the same body (its float 1.0 and 2.0 are floats in the revision's term).
        let floats = try await server.request("PUT", "/db/floats", body: Data(#"{"one":1.0,"two":2.0}"#.utf8), headers: json)
        #expect(floats.json["rev"] == "1-13f523a7ba9f5e2a304b41d812e1e755")
    }
}

extension ServerReplicationFidelityTests {
    /// The parts of a multipart body: each one's headers (names lowercased) and bytes.
    static func parts(_ body: Data, boundary: String) -> [(headers: [String: String], body: Data)] {
        let delimiter = Data("--\(boundary)".utf8)
        var parts: [(headers: [String: String], body: Data)] = []
        var ranges: [Range<Data.Index>] = []
        var searchFrom = body.startIndex
        while let found = body.range(of: delimiter, in: searchFrom ..< body.endIndex) {
            ranges.append(found)
            searchFrom = found.upperBound
        }
        for (this, next) in zip(ranges, ranges.dropFirst()) {
            var part = body[this.upperBound ..< next.lowerBound]
            if part.starts(with: Data("\r\n".utf8)) { part = part.dropFirst(2) }
            if part.suffix(2) == Data("\r\n".utf8) { part = part.dropLast(2) }
            guard let split = part.range(of: Data("\r\n\r\n".utf8)) else { continue }
            var headers: [String: String] = [:]
            for line in String(decoding: part[part.startIndex ..< split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            parts.append((headers, Data(part[split.upperBound...])))
        }
        return parts
    }

    static func boundary(_ contentType: String?) -> String? {
        contentType?.components(separatedBy: "boundary=").last?.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }

    @Test("open_revs with Accept: multipart/mixed answers as CouchDB does: JSON parts, attachments following in multipart/related parts, missing revisions marked")
    func openRevisionsMultipart() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let design = try await server.request("PUT", "/db/_design/app", json: ["views": ["v": ["map": "function (doc) { emit(doc._id, 1.0); }"]]])
        let withFile = try await server.request("PUT", "/db/d", json: ["n": 1, "_attachments": ["a.bin": ["content_type": "application/octet-stream", "data": "AAEC/w=="]]])
        let designRev = try #require(design.json["rev"]?.stringValue)
        let fileRev = try #require(withFile.json["rev"]?.stringValue)
        let accept = ["Accept": "multipart/mixed"]
        let missing = "9-" + String(repeating: "f", count: 32)
        let plain = try await server.request("GET", "/db/_design/app?revs=true&latest=true&open_revs=%5B%22\(designRev)%22,%22\(missing)%22%5D", headers: accept)
        #expect(plain.status == 200)
        let outer = try #require(Self.boundary(plain.header("Content-Type")))
        #expect(plain.header("Content-Type")?.hasPrefix("multipart/mixed") == true)
        let parts = Self.parts(plain.body, boundary: outer)
        #expect(parts.count == 2)
        #expect(parts.first?.headers["content-type"] == "application/json")
        let designJSON = try JSONValue(parsing: String(decoding: parts[0].body, as: UTF8.self))
        #expect(designJSON["_rev"]?.stringValue == designRev)
        #expect(designJSON["_revisions"]?["start"] == 1)
        #expect(parts.last?.headers["content-type"] == "application/json; error=\"true\"")
        #expect(String(decoding: parts[1].body, as: UTF8.self) == #"{"missing":"\#(missing)"}"#)

        let attached = try await server.request("GET", "/db/d?revs=true&open_revs=%5B%22\(fileRev)%22%5D", headers: accept)
        let outerParts = Self.parts(attached.body, boundary: try #require(Self.boundary(attached.header("Content-Type"))))
        #expect(outerParts.count == 1)
        let related = try #require(outerParts.first)
        #expect(related.headers["content-type"]?.hasPrefix("multipart/related") == true)
        let inner = Self.parts(related.body, boundary: try #require(Self.boundary(related.headers["content-type"])))
        #expect(inner.count == 2)
        let json = try JSONValue(parsing: String(decoding: inner[0].body, as: UTF8.self))
        #expect(json["_attachments"]?["a.bin"]?["follows"] == true)
        #expect(json["_attachments"]?["a.bin"]?["length"] == 4)
        #expect(json["_attachments"]?["a.bin"]?["data"] == nil)
        #expect(inner[1].headers["content-disposition"] == "attachment; filename=\"a.bin\"")
        #expect(inner[1].body == Data([0, 1, 2, 255]))
        // Without multipart, the JSON array as before.
        let array = try await server.request("GET", "/db/d?open_revs=all")
        #expect(array.json[0]?["ok"]?["_id"] == "d")
    }
}

extension ServerReplicationFidelityTests {
    @Test("An attachment part sent gzip-encoded (as CouchDB's replicator sends compressible ones) is kept so, its digest the sender's; open_revs sends it back so")
    func gzipEncodedParts() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let text = Data(String(repeating: "compressible text ", count: 200).utf8)
        let compressed = Data(Gzip.compress(Array(text)))
        let json: JSONValue = ["_id": "t", "_rev": .string("1-" + String(repeating: "d", count: 32)),
                               "_attachments": ["note.txt": ["content_type": "text/plain", "revpos": 1, "follows": true,
                                                             "encoding": "gzip", "encoded_length": .number(Double(compressed.count)),
                                                             "length": .number(Double(text.count))]]]
        var body = Data("--xyz\r\nContent-Type: application/json\r\n\r\n\(json.jsonText)\r\n--xyz\r\n\r\n".utf8)
        body += compressed + Data("\r\n--xyz--".utf8)
        let put = try await server.request("PUT", "/db/t?new_edits=false", body: body, headers: ["Content-Type": "multipart/related; boundary=\"xyz\""])
        #expect(put.status == 201, "\(put.json.jsonText)")
        let attachment = try await server.request("GET", "/db/t/note.txt")
        #expect(attachment.body == text)
        let stub = try await server.request("GET", "/db/t").json["_attachments"]?["note.txt"]
        #expect(stub?["length"] == .number(Double(text.count)))
        // Stored as sent: the digest is the sender's, the MD5 of the gzip bytes.
        #expect(stub?["digest"] == .string("md5-" + Data(MD5.hash(Array(compressed))).base64EncodedString()))
        // As a source, the attachment goes out as it is stored, as CouchDB sends it (`encoding`, `encoded_length`).
        let connection = try RawConnection(port: server.port)
        #expect(connection.send("GET /db/t?revs=true&open_revs=all&latest=true HTTP/1.1\r\nHost: x\r\nAccept: multipart/mixed\r\nConnection: close\r\n\r\n"))
        let reply = await connection.receive(for: 5).text
        #expect(reply.contains(#""encoding":"gzip","encoded_length":\#(compressed.count)"#), "\(reply.prefix(800))")
        #expect(reply.contains("Content-Length: \(compressed.count)"))
    }
}

extension ServerReplicationFidelityTests {
    @Test("A local document's revision number at the top of UInt64 is refused, not a trap: replicated or edited after")
    func localRevisionAtTheTop() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let top = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "_local/top", "_rev": .string("0-\(UInt64.max)"), "v": 1],
        ]])
        #expect(top.status == 201)
        #expect(top.json[0]?["error"] == "bad_request", "\(top.json.jsonText)")
        let near = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "_local/near", "_rev": .string("0-\(UInt64.max - 1)"), "v": 1],
        ]])
        #expect(near.status == 201)
        let stored = try await server.request("GET", "/db/_local/near")
        #expect(stored.json["_rev"] == .string("0-\(UInt64.max)"))
        let edit = try await server.request("PUT", "/db/_local/near", json: ["_rev": .string("0-\(UInt64.max)"), "v": 2])
        #expect(edit.status == 400, "\(edit.json.jsonText)")
        #expect(try await server.request("GET", "/_up").status == 200)
    }
}
