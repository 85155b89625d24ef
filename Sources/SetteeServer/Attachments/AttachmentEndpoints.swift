import Foundation
import HTTPTypes
import Hummingbird
import Settee
import SetteeCore

/// `/{db}/{docid}/{attname}` (and `/{db}/_design/{ddoc}/{attname}`): one
/// attachment read, written or removed, as `chttpd_db:db_attachment_req` does.
///
/// Bytes are streamed both ways: a `PUT` body goes to a file in the data
/// folder (`.uploads/`) and is stored from there a chunk at a time; a `GET`
/// reads one stored chunk (1 MiB) per read transaction as the client takes them.
extension CouchAPI {
    func attachmentEndpoint(_ name: String, id: String, attachment: String, _ request: inout CouchRequest) async throws -> Response {
        let db = try databases.database(name)
        switch request.method {
        case .get, .head:
            return try await readAttachment(db, id: id, attachment: attachment, request)
        case .put:
            return try await putAttachment(db, database: name, id: id, attachment: attachment, &request)
        case .delete:
            return try await deleteAttachment(db, id: id, attachment: attachment, request)
        default:
            throw CouchError.methodNotAllowed("DELETE,GET,HEAD,PUT")
        }
    }

    // MARK: GET, HEAD

    private func readAttachment(_ db: Database, id: String, attachment: String, _ request: CouchRequest) async throws -> Response {
        // rev= names a leaf, deleted or not (a tombstone keeps the attachments its deletion named).
        let stored = if let text = request.parameter("rev") {
            try await db.storedAttachment(attachment, of: id, revision: try Self.revision(text))
        } else {
            try await db.storedAttachment(attachment, of: id)
        }
        let md5 = Data(stored.md5).base64EncodedString()
        let etag = "\"\(md5)\""
        if Self.etagMatches(request.header(.ifNoneMatch), etag) {
            return Response(status: .notModified, headers: [.eTag: etag])
        }
        let length = stored.blob.length ?? 0
        var headers: HTTPFields = [
            .contentSecurityPolicy: "sandbox",
            .eTag: etag,
            .cacheControl: "must-revalidate",
            .contentType: stored.blob.contentType,
            .acceptRanges: "bytes",
            .contentMD5: md5,
        ]
        if let encodedLength = stored.encodedLength {
            // Stored gzip-encoded, as CouchDB stores compressible types: sent so to a client that
            // takes gzip, inflated for one that does not. As CouchDB, a range past the end is still
            // refused (416), and any other is answered with the whole.
            _ = try Self.byteRanges(request.header(.range), length: length)
            headers[.acceptRanges] = "none"
            if Self.acceptsGzip(request.header(.acceptEncoding)) {
                headers[.contentEncoding] = "gzip"
                headers[.contentLength] = String(encodedLength)
                return Response(status: .ok, headers: headers, body: Self.attachmentBody(db, stored, ranges: [0 ..< encodedLength]))
            }
            headers[.contentLength] = String(length)
            return Response(status: .ok, headers: headers, body: Self.decodedAttachmentBody(db, stored))
        }
        switch try Self.byteRanges(request.header(.range), length: length) {
        case nil:
            headers[.contentLength] = String(length)
            return Response(status: .ok, headers: headers, body: Self.attachmentBody(db, stored, ranges: [0 ..< length]))
        case let ranges? where ranges.count == 1:
            let range = ranges[0]
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)"
            headers[.contentLength] = String(range.count)
            return Response(status: .partialContent, headers: headers, body: Self.attachmentBody(db, stored, ranges: ranges))
        case let ranges?:
            return Self.multipartRanges(db, stored, ranges: ranges)
        }
    }

    /// A `rev` parameter's revision.
    private static func revision(_ text: String) throws(CouchError) -> Revision {
        let revision = try Self.parsedRevision(text)
        return revision
    }

    /// Whether an `If-None-Match` header names `etag` (weak or strong), as `chttpd:etag_match`.
    static func etagMatches(_ header: String?, _ etag: String) -> Bool {
        guard let header else { return false }
        return header.split(whereSeparator: { $0 == "," || $0 == " " }).contains { candidate in
            (candidate.hasPrefix("W/") ? candidate.dropFirst(2) : candidate) == etag
        }
    }

    /// The ranges a `Range: bytes=…` header asks for, as half-open ranges of
    /// the bytes; nil to send them all (no header, one that does not parse, or
    /// `bytes=0-`), as mochiweb and `chttpd_db:parse_ranges` read it.
    /// - Throws: 416 `requested_range_not_satisfiable` for a range that ends
    ///   before it starts or starts past the end.
    static func byteRanges(_ header: String?, length: Int) throws(CouchError) -> [Range<Int>]? {
        guard let header, header.hasPrefix("bytes=") else { return nil }
        var parsed: [(from: Int?, to: Int?)] = []
        for token in header.dropFirst(6).split(separator: ",") {
            let text = token.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            if text.hasPrefix("-") {
                guard let suffix = position(text.dropFirst()) else { return nil }
                parsed.append((nil, suffix))
                continue
            }
            let parts = text.split(separator: "-", omittingEmptySubsequences: true)
            guard parts.count == 1 || parts.count == 2, let from = position(parts[0]) else { return nil }
            if parts.count == 2 {
                guard let to = position(parts[1]) else { return nil }
                parsed.append((from, to))
            } else {
                parsed.append((from, nil))
            }
        }
        if parsed.isEmpty { return nil }
        if parsed[0].from == 0, parsed[0].to == nil { return nil }
        let unsatisfiable = CouchError(.rangeNotSatisfiable, "requested_range_not_satisfiable", "Requested range not satisfiable")
        return try parsed.map { range throws(CouchError) -> Range<Int> in
            var from = range.from ?? max(0, length - (range.to ?? 0))
            var to = range.from == nil ? length - 1 : min(range.to ?? length - 1, length - 1)
            if let given = range.to, let start = range.from, given < start { throw unsatisfiable }
            if from >= length || to < from { throw unsatisfiable }
            from = max(0, from)
            to = max(from, to)
            return from ..< to + 1
        }
    }

    /// A byte position of a `Range` header: its digits, `Int.max` past
    /// `Int`'s range (a position no attachment reaches, as Erlang's integers
    /// read it); nil for anything but digits.
    private static func position(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text) ?? Int.max
    }

    /// A body streaming `ranges` of the attachment's bytes, one after another.
    static func attachmentBody(_ db: Database, _ stored: StoredAttachment, ranges: [Range<Int>]) -> ResponseBody {
        ResponseBody(contentLength: ranges.reduce(0) { $0 + $1.count }) { writer in
            for range in ranges { try await writeBytes(db, stored, range, to: &writer) }
            try await writer.finish(nil)
        }
    }

    /// Whether an `Accept-Encoding` header takes gzip (`gzip` or `x-gzip`
    /// without `q=0`).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { entry in
            let parts = entry.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parts.first, coding == "gzip" || coding == "x-gzip" else { return false }
            return !parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "") == "q=0" || $0 == "q=0.0" }
        }
    }

    /// A body streaming an attachment stored gzip-encoded, inflated.
    static func decodedAttachmentBody(_ db: Database, _ stored: StoredAttachment) -> ResponseBody {
        ResponseBody(contentLength: stored.blob.length ?? 0) { writer in
            try await writeDecodedBytes(db, stored, to: &writer)
            try await writer.finish(nil)
        }
    }

    /// Writes the bytes of an attachment stored gzip-encoded, inflated a chunk at a time.
    static func writeDecodedBytes(_ db: Database, _ stored: StoredAttachment, to writer: inout any ResponseBodyWriter) async throws {
        let inflater = try Gzip.Inflater()
        var number = 0
        while number * StoredAttachment.chunkBytes < stored.encodedLength ?? 0 {
            guard let chunk = try await db.attachmentChunk(of: stored, number: number) else {
                throw CouchError(.notFound, "not_found", "Document is missing attachment")
            }
            var buffer = ByteBuffer()
            try chunk.withUnsafeBytes { try inflater.feed($0) { buffer.writeBytes($0) } }
            if buffer.readableBytes > 0 { try await writer.write(buffer) }
            number += 1
        }
        try inflater.finish()
    }

    /// Writes `range` of the attachment's bytes, reading only the chunks it covers.
    static func writeBytes(_ db: Database, _ stored: StoredAttachment, _ range: Range<Int>,
                           to writer: inout any ResponseBodyWriter) async throws {
        let size = StoredAttachment.chunkBytes
        var number = range.lowerBound / size
        while number * size < range.upperBound {
            guard let chunk = try await db.attachmentChunk(of: stored, number: number) else {
                // The document changed since the response began and no document holds these bytes now.
                throw CouchError(.notFound, "not_found", "Document is missing attachment")
            }
            let start = max(range.lowerBound - number * size, 0)
            let end = min(range.upperBound - number * size, chunk.count)
            if start < end {
                var buffer = ByteBuffer()
                buffer.writeBytes(chunk[start ..< end])
                try await writer.write(buffer)
            }
            number += 1
        }
    }

    /// Several ranges: `multipart/byteranges`, as `chttpd_db:send_ranges_multipart`.
    static func multipartRanges(_ db: Database, _ stored: StoredAttachment, ranges: [Range<Int>]) -> Response {
        let boundary = newUUID()
        let length = stored.blob.length ?? 0
        let headers: HTTPFields = [.contentType: "multipart/byteranges; boundary=\"\(boundary)\""]
        return Response(status: .partialContent, headers: headers, body: ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "--\(boundary)"))
            for range in ranges {
                try await writer.write(ByteBuffer(string: "\r\nContent-Type: \(stored.blob.contentType)\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)\r\n\r\n"))
                try await writeBytes(db, stored, range, to: &writer)
                try await writer.write(ByteBuffer(string: "\r\n--\(boundary)"))
            }
            try await writer.write(ByteBuffer(string: "--"))
            try await writer.finish(nil)
        })
    }

    // MARK: PUT

    private func putAttachment(_ db: Database, database: String, id: String, attachment: String,
                               _ request: inout CouchRequest) async throws -> Response {
        let encoding = request.header(.contentEncoding)?.trimmingCharacters(in: .whitespaces).lowercased() ?? "identity"
        guard encoding == "identity" else {
            let reason = encoding == "gzip" ? "Settee stores attachments as sent and does not take gzip-encoded ones: send the bytes unencoded"
                : "Only gzip and identity content-encodings are supported"
            throw CouchError(.unsupportedMediaType, "bad_content_type", reason)
        }
        let contentType = request.header(.contentType) ?? "application/octet-stream"
        let revisionText = request.parameter("rev") ?? Self.unquoted(request.header(.ifMatch))
        var revision: Revision?
        if let revisionText {
            let parsed = try Self.parsedRevision(revisionText)
            revision = parsed
        }
        let upload = try await receiveUpload(&request)
        defer { try? FileManager.default.removeItem(at: upload) }
        let written: WriteResult
        do {
            written = try await db.putAttachment(Blob(file: upload, contentType: contentType), named: attachment, of: id, revision: revision)
        } catch let error as DocumentError where error.code == .conflict && revision != nil {
            // A revision given for a document that is not there: CouchDB finds no such revision.
            if try await db.document(id) == nil { throw CouchError.missing }
            throw error
        }
        return CouchResponse.json(.created, Self.writeResult(written), headers: [
            .location: "/\(Self.escapePath(database))/\(Self.escapePath(id))/\(Self.escapePath(attachment))",
        ])
    }

    /// The request body written to a new file under the data folder's
    /// `.uploads` (removed by the caller), checked against `Content-MD5`.
    func receiveUpload(_ request: inout CouchRequest) async throws -> URL {
        let folder = UploadFolder.url(in: configuration.dataDirectory)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(Self.newUUID())
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw Self.uploadError(POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO), file: file)
        }
        do {
            let handle = try FileHandle(forWritingTo: file)
            defer { try? handle.close() }
            var received = 0
            var md5 = MD5()
            for try await buffer in request.request.body {
                received += buffer.readableBytes
                guard received <= request.limits.maximumRequestBytes else {
                    throw CouchError(.contentTooLarge, "too_large", "the request entity is too large")
                }
                try buffer.withUnsafeReadableBytes { bytes in
                    md5.update(bytes)
                    try handle.write(contentsOf: bytes)
                }
            }
            if let expected = request.header(.contentMD5), Data(base64Encoded: expected) != Data(md5.finalize()) {
                throw CouchError(.badRequest, "content_md5_mismatch", "Possible message corruption.")
            }
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw Self.uploadError(error, file: file)
        }
        return file
    }

    /// What a failed upload says: CouchDB's errors as they are, a full disk
    /// as `storage_full` (as a full database says it), anything else as a
    /// `file_error` naming the file.
    static func uploadError(_ error: any Error, file: URL) -> any Error {
        if error is CouchError || error is CancellationError { return error }
        let code = (error as? POSIXError)?.code.rawValue ?? {
            let described = error as NSError
            if described.domain == NSPOSIXErrorDomain { return Int32(described.code) }
            if let underlying = described.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
                return Int32(underlying.code)
            }
            return described.domain == NSCocoaErrorDomain && described.code == CocoaError.fileWriteOutOfSpace.rawValue ? ENOSPC : 0
        }()
        if code == ENOSPC || code == EDQUOT {
            return CouchError(.internalServerError, "storage_full", "No space left on device - while receiving an upload to \(file.path)")
        }
        return CouchError(.internalServerError, "file_error", "\(error.localizedDescription) - while receiving an upload to \(file.path)")
    }

    // MARK: DELETE

    private func deleteAttachment(_ db: Database, id: String, attachment: String, _ request: CouchRequest) async throws -> Response {
        guard let text = request.parameter("rev") ?? Self.unquoted(request.header(.ifMatch)) else {
            // As CouchDB: the document and attachment must exist; then, without a revision, it conflicts.
            _ = try await db.storedAttachment(attachment, of: id)
            throw CouchError(.conflict, "conflict", "Document update conflict.")
        }
        let revision = try Self.parsedRevision(text)
        if try await db.document(id) == nil { throw CouchError.missing }
        let written = try await db.removeAttachment(attachment, of: id, revision: revision)
        return CouchResponse.json(.ok, Self.writeResult(written))
    }
}

extension HTTPField.Name {
    static let contentMD5 = HTTPField.Name("Content-MD5")!
}

extension CouchAPI {
    /// `atts_since=["1-…", …]`: the revisions whose attachments the reader
    /// has (the others come inline, as with `attachments=true`).
    static func attachmentsSince(_ request: CouchRequest) throws(CouchError) -> [Revision]? {
        guard let text = request.parameter("atts_since") else { return nil }
        guard case .array(let values)? = try? JSONValue(parsing: text) else {
            throw CouchError.badRequest("atts_since must be a JSON array of revisions, not \(text)")
        }
        return try values.map { value throws(CouchError) -> Revision in
            guard let text = value.stringValue, let revision = Revision(text) else { throw CouchError.badRequest("Invalid rev format") }
            return revision
        }
    }
}
