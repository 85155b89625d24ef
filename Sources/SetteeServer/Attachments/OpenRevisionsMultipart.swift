import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// One answer of `open_revs`: a leaf's JSON, or a revision not found.
enum OpenRevision: Sendable {
    /// The document's JSON bytes.
    case found([UInt8])
    /// A revision named that the document does not have.
    case missing(String)

    /// `{"ok": doc}` or `{"missing": rev}`, as the JSON answer lists it.
    var jsonText: String {
        switch self {
        case .found(let bytes): "{\"ok\":" + String(decoding: bytes, as: UTF8.self) + "}"
        case .missing(let revision): "{\"missing\":" + JSONValue.string(revision).jsonText + "}"
        }
    }
}

/// `open_revs` as CouchDB answers a client that accepts `multipart/mixed`
/// (its replicator, for design documents and documents with attachments;
/// `chttpd_db:send_docs_multipart`): one part per answer. A leaf without
/// attachment bytes is an `application/json` part; one with them is a
/// `multipart/related` part, its JSON first with those attachments marked
/// `"follows": true`, then one part per attachment. A revision not found is
/// `application/json; error="true"` holding `{"missing": rev}`.
enum OpenRevisionsMultipart {
    static func response(_ results: [OpenRevision], db: Database, id: String) async throws -> Response {
        let outer = CouchAPI.newUUID()
        var body = Data("--\(outer)".utf8)
        for result in results {
            switch result {
            case .missing:
                body += Data("\r\nContent-Type: application/json; error=\"true\"\r\n\r\n\(result.jsonText)\r\n--\(outer)".utf8)
            case .found(let bytes):
                let (contentType, part) = try await documentPart(bytes, db: db, id: id)
                body += Data("\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
                body += part
                body += Data("\r\n--\(outer)".utf8)
            }
        }
        body += Data("--".utf8)
        return Response(status: .ok, headers: [.contentType: "multipart/mixed; boundary=\"\(outer)\"", .contentLength: String(body.count)],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A leaf's part: its content type, and its bytes. An attachment stored
    /// gzip-encoded follows as it is stored, with `"encoding": "gzip"` and
    /// its `encoded_length`, as CouchDB sends it (its digest is that of
    /// those bytes, which a CouchDB receiving it checks).
    private static func documentPart(_ bytes: [UInt8], db: Database, id: String) async throws -> (String, Data) {
        guard case .object(var members) = try CouchRequest.json(bytes),
              let index = members.firstIndex(where: { $0.key == "_attachments" }),
              case .object(let attachments) = members[index].value,
              attachments.contains(where: { $0.value["data"] != nil }) else {
            return ("application/json", Data(bytes))
        }
        var following: [(name: String, contentType: String, data: Data, encoded: Bool)] = []
        var listed: [(key: String, value: JSONValue)] = []
        let revision = members.first { $0.key == "_rev" }?.value.stringValue.flatMap(Revision.init)
        for (name, attachment) in attachments {
            guard case .object(var fields) = attachment, let text = attachment["data"]?.stringValue,
                  var data = Data(base64Encoded: text) else {
                listed.append((name, attachment))
                continue
            }
            fields.removeAll { ["data", "length", "follows", "encoding", "encoded_length"].contains($0.key) }
            fields.append(("length", .number(Double(data.count))))
            var encoded = false
            if let revision, let stored = try? await db.storedAttachment(name, of: id, revision: revision),
               let encodedLength = stored.encodedLength, let raw = try await storedBytes(db, stored, length: encodedLength) {
                data = raw
                encoded = true
                fields += [("encoding", "gzip"), ("encoded_length", .number(Double(encodedLength)))]
            }
            fields.append(("follows", true))
            listed.append((name, .object(fields)))
            following.append((name, attachment["content_type"]?.stringValue ?? "application/octet-stream", data, encoded))
        }
        members[index].value = .object(listed)
        let inner = CouchAPI.newUUID()
        var part = Data("--\(inner)\r\nContent-Type: application/json\r\n\r\n\(JSONValue.object(members).exactJSONText)\r\n--\(inner)".utf8)
        for attachment in following {
            let encoding = attachment.encoded ? "\r\nContent-Encoding: gzip" : ""
            part += Data("\r\nContent-Disposition: attachment; filename=\"\(attachment.name)\"\r\nContent-Type: \(attachment.contentType)\(encoding)\r\nContent-Length: \(attachment.data.count)\r\n\r\n".utf8)
            part += attachment.data
            part += Data("\r\n--\(inner)".utf8)
        }
        part += Data("--".utf8)
        return ("multipart/related; boundary=\"\(inner)\"", part)
    }

    /// The bytes of an attachment as stored (gzip-encoded ones encoded); nil
    /// when they are no longer stored.
    private static func storedBytes(_ db: Database, _ stored: StoredAttachment, length: Int) async throws -> Data? {
        var data = Data()
        data.reserveCapacity(length)
        var number = 0
        while data.count < length {
            guard let chunk = try await db.attachmentChunk(of: stored, number: number) else { return nil }
            data.append(contentsOf: chunk)
            number += 1
        }
        return data
    }
}
