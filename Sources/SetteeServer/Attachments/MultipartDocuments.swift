import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// Documents with their attachments as `multipart/related` bodies, as
/// CouchDB reads (`couch_doc:doc_from_multi_part_stream`) and writes them
/// (`couch_httpd_multipart:encode_multipart_stream`): the document's JSON
/// first, its `_attachments` marked `"follows": true`, then one part per
/// such attachment, in order.
extension CouchAPI {
    // MARK: PUT

    /// `PUT /{db}/{docid}` with `Content-Type: multipart/related`: nil for
    /// any other body. The body is saved to a file, split into its parts
    /// (each attachment's bytes to a file of its own) and stored from there.
    func multipartDocumentPut(_ db: Database, database: String, id: String, _ request: inout CouchRequest) async throws -> Response? {
        guard let type = request.header(.contentType), type.lowercased().hasPrefix("multipart/related") else { return nil }
        guard let boundary = Self.boundary(of: type) else {
            throw CouchError.badRequest("multipart/related without a boundary: \(type)")
        }
        let upload = try await receiveUpload(&request)
        var files: [URL] = []
        defer {
            try? FileManager.default.removeItem(at: upload)
            for file in files { try? FileManager.default.removeItem(at: file) }
        }
        let body = try Data(contentsOf: upload, options: .alwaysMapped)
        let parts = try Self.multipartParts(body, boundary: boundary)
        guard let first = parts.first else { throw CouchError.badRequest("multipart/related body without parts") }
        guard String(validating: body[first], as: UTF8.self) != nil else { throw CouchError.invalidJSON }
        guard case .object = try? CouchRequest.json(body[first]) else {
            throw CouchError.badRequest("the first part of a multipart/related document must be its JSON object")
        }
        var document = try CouchRequest.json(body[first])
        document = Self.setting("_id", to: .string(id), in: document)
        document = try Self.settingRevision(of: request, in: document)
        document = try await preparedForWrite(document, database: database, request: request)
        let folder = UploadFolder.url(in: configuration.dataDirectory)
        for part in parts.dropFirst() {
            let file = folder.appendingPathComponent(Self.newUUID())
            files.append(file)
            guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
                throw CouchError(.internalServerError, "file_error", "could not create the upload file \(file.path)")
            }
            let handle = try FileHandle(forWritingTo: file)
            defer { try? handle.close() }
            try handle.write(contentsOf: body[part])
        }
        if request.parameter("new_edits") == "false" {
            return try await putReplicatedDocument(database, db, id: id, document, following: files)
        }
        let written = try await db.put(document.exactJSONText, following: files)
        return CouchResponse.json(.created, Self.writeResult(written),
                                  headers: [.location: "/\(Self.escapePath(database))/\(Self.escapePath(written.id))",
                                            .eTag: CouchResponse.etag(written.revision)])
    }

    /// The `boundary` parameter of a multipart content type, quoted or not.
    static func boundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// The byte ranges of the parts' contents (their headers skipped).
    static func multipartParts(_ body: Data, boundary: String) throws(CouchError) -> [Range<Int>] {
        let dashBoundary = Data("--\(boundary)".utf8)
        let delimiter = Data("\r\n--\(boundary)".utf8)
        let headerEnd = Data("\r\n\r\n".utf8)
        let malformed = CouchError.badRequest("malformed multipart/related body: no closing --\(boundary)--")
        guard var position = body.range(of: dashBoundary)?.upperBound else { throw malformed }
        var parts: [Range<Int>] = []
        while true {
            // After a delimiter: "--" ends the body, otherwise a line break and the part's headers.
            if body.count - position >= 2, body[position] == UInt8(ascii: "-"), body[position + 1] == UInt8(ascii: "-") { return parts }
            if position == body.count { return parts }
            guard let headers = body.range(of: headerEnd, in: position ..< body.count) else {
                // A part without headers starts right after the line break.
                throw malformed
            }
            let start = headers.upperBound
            // Headers may be absent: the line break after the boundary is then the blank line's first half.
            guard let end = body.range(of: delimiter, in: start ..< body.count) else { throw malformed }
            parts.append(start ..< end.lowerBound)
            position = end.upperBound
        }
    }

    // MARK: GET

    /// `GET /{db}/{docid}?attachments=true` (or `atts_since`) with `Accept:
    /// multipart/related`: the document's JSON, then the bytes of each
    /// attachment it does not list as a stub, streamed. Nil when not asked for.
    func multipartDocumentGet(_ db: Database, id: String, _ request: CouchRequest, since: [Revision]?) async throws -> Response? {
        guard try request.flag("attachments") || since != nil,
              request.header(.accept)?.lowercased().contains("multipart/related") == true,
              let document = try await db.document(id),
              case .object(var members) = try JSONValue(parsing: String(decoding: document.jsonBytes, as: UTF8.self)),
              let index = members.firstIndex(where: { $0.key == "_attachments" }),
              case .object(let attachments) = members[index].value else { return nil }
        if let rev = request.parameter("rev"), rev != document.revision.description { throw CouchError.missing }
        let after = since?.map(\.generation).filter { $0 <= document.revision.generation }.max().map(Int.init) ?? 0
        // Attachments stored gzip-encoded follow so for a client that asks (`att_encoding_info`, as
        // CouchDB's replicator does), inflated for others.
        let sendsEncoded = try request.flag("att_encoding_info")
        var following: [(name: String, stored: StoredAttachment, encoded: Bool)] = []
        var listed: [(key: String, value: JSONValue)] = []
        for (name, stub) in attachments {
            guard let revpos = stub["revpos"]?.doubleValue, Int(revpos) > after else {
                listed.append((name, stub))
                continue
            }
            let stored = try await db.storedAttachment(name, of: id)
            let encoded = sendsEncoded && stored.encodedLength != nil
            following.append((name, stored, encoded))
            var fields: [(key: String, value: JSONValue)] = [("content_type", stub["content_type"] ?? .null), ("revpos", .number(revpos)),
                                                             ("digest", stub["digest"] ?? .null), ("length", stub["length"] ?? 0)]
            if encoded { fields += [("encoding", "gzip"), ("encoded_length", .number(Double(stored.encodedLength ?? 0)))] }
            fields.append(("follows", true))
            listed.append((name, .object(fields)))
        }
        members[index].value = .object(listed)
        let json = JSONValue.object(members).exactJSONText
        let etag = CouchResponse.etag(document.revision)
        guard !following.isEmpty else {
            return Response(status: .ok, headers: [.contentType: "application/json", .eTag: etag, .contentLength: String(json.utf8.count)],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: json)))
        }
        let boundary = Self.newUUID()
        let parts = following
        let opening = "--\(boundary)\r\nContent-Type: application/json\r\n\r\n\(json)\r\n--\(boundary)"
        @Sendable func partLength(_ attachment: (name: String, stored: StoredAttachment, encoded: Bool)) -> Int {
            attachment.encoded ? attachment.stored.encodedLength ?? 0 : attachment.stored.blob.length ?? 0
        }
        let partHeads = following.map { attachment in
            "\r\nContent-Disposition: attachment; filename=\"\(attachment.name)\"\r\nContent-Type: \(attachment.stored.blob.contentType)"
                + (attachment.encoded ? "\r\nContent-Encoding: gzip" : "") + "\r\nContent-Length: \(partLength(attachment))\r\n\r\n"
        }
        let length = opening.utf8.count + 2 + zip(following, partHeads).reduce(0) { total, pair in
            total + pair.1.utf8.count + partLength(pair.0) + 4 + boundary.utf8.count
        }
        let headers: HTTPFields = [.contentType: "multipart/related; boundary=\"\(boundary)\"", .eTag: etag,
                                   .contentLength: String(length)]
        return Response(status: .ok, headers: headers, body: ResponseBody(contentLength: length) { writer in
            try await writer.write(ByteBuffer(string: opening))
            for (attachment, head) in zip(parts, partHeads) {
                try await writer.write(ByteBuffer(string: head))
                if attachment.stored.encodedLength != nil && !attachment.encoded {
                    try await Self.writeDecodedBytes(db, attachment.stored, to: &writer)
                } else {
                    try await Self.writeBytes(db, attachment.stored, 0 ..< partLength(attachment), to: &writer)
                }
                try await writer.write(ByteBuffer(string: "\r\n--\(boundary)"))
            }
            try await writer.write(ByteBuffer(string: "--"))
            try await writer.finish(nil)
        })
    }
}
