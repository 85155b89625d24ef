import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/{db}/{docid}` and `/{db}/_local/{id}`.
extension CouchAPI {
    func documentEndpoint(_ name: String, id: String, _ request: inout CouchRequest) async throws -> Response {
        if let response = try await documentReadOrCopy(name, id: id, &request) { return response }
        let db = try databases.database(name)
        switch request.method {
        case .get, .head:
            let attachments = try request.flag("attachments")
            let since = try Self.attachmentsSince(request)
            // A system database's documents go out to its non-administrators through its read rule, as JSON.
            let readRule = request.isDatabaseAdministrator ? nil : databases.systemDatabase(name)
            if readRule == nil, let multipart = try await multipartDocumentGet(db, id: id, request, since: since) { return multipart }
            guard let document = try await db.document(id, attachments: attachments || since != nil, since: since) else {
                let deleted = try await db.documentIncludingDeleted(id)
                throw CouchError(.notFound, "not_found", deleted?.isDeleted == true ? "deleted" : "missing")
            }
            if let rev = request.parameter("rev"), rev != document.revision.description {
                throw CouchError.missing
            }
            let etag = CouchResponse.etag(document.revision)
            if request.header(.ifNoneMatch) == etag {
                return Response(status: .notModified, headers: [.eTag: etag])
            }
            var buffer = ByteBuffer()
            if let readRule {
                buffer.writeString(readRule.afterRead(try document.value, user: request.user).exactJSONText)
            } else {
                buffer.writeBytes(document.jsonBytes)
            }
            buffer.writeInteger(UInt8(ascii: "\n"))
            return CouchResponse.json(buffer: buffer, headers: [.eTag: etag])
        case .put:
            if let multipart = try await multipartDocumentPut(db, database: name, id: id, &request) { return multipart }
            if request.parameter("new_edits") == "false" { return try await putReplicatedDocument(name, db, id: id, &request) }
            var document = try await request.documentBody(id: id)
            document = Self.setting("_id", to: .string(id), in: document)
            document = try Self.settingRevision(of: request, in: document)
            document = try await preparedForWrite(document, database: name, request: request)
            let written = try await db.put(document.exactJSONText)
            return CouchResponse.json(.created, Self.writeResult(written),
                                      headers: [.location: "/\(Self.escapePath(name))/\(Self.escapePath(written.id))",
                                                .eTag: CouchResponse.etag(written.revision)])
        case .delete:
            guard let text = request.parameter("rev") ?? Self.unquoted(request.header(.ifMatch)) else {
                // Without a revision: a conflict with a live document, as CouchDB answers; none to delete otherwise.
                // Whether it is there is a read, through the system databases' read gate.
                if !request.isDatabaseAdministrator, let system = databases.systemDatabase(name) {
                    try system.authorizeRead(of: id, parameters: [], user: request.user)
                }
                if !id.hasPrefix("_local/") {
                    guard let winner = try await db.revisions(of: id)?.winner else { throw CouchError.missing }
                    if winner.isDeleted { throw CouchError(.notFound, "not_found", "deleted") }
                }
                throw CouchError(.conflict, "conflict", "Document update conflict.")
            }
            let revision = try Self.parsedRevision(text)
            let written = try await db.delete(id, revision: revision)
            return CouchResponse.json(.ok, Self.writeResult(written), headers: [.eTag: CouchResponse.etag(written.revision)])
        default:
            throw CouchError.methodNotAllowed("DELETE,GET,HEAD,POST,PUT,COPY")
        }
    }

    /// `document` with the revision a write names: its `_rev`, or else `?rev=`,
    /// or else `If-Match`; names that disagree are a client's error, as in
    /// CouchDB's `chttpd_db:couch_doc_from_req` (revisions compared as parsed,
    /// so `1-foobar` and a hex id never agree by accident).
    static func settingRevision(of request: CouchRequest, in document: JSONValue) throws -> JSONValue {
        let query = try request.parameter("rev").map(parsedRevision)
        let etag = try unquoted(request.header(.ifMatch)).map(parsedRevision)
        if case .string(let text)? = document["_rev"] {
            let body = try parsedRevision(text)
            if let query, body != query {
                throw CouchError.badRequest("Document rev from request body and query string have different values")
            }
            if let etag, body != etag { throw CouchError.badRequest("Document rev and etag have different values") }
            return document
        }
        if let query, let etag, query != etag { throw CouchError.badRequest("Document rev and etag have different values") }
        guard let revision = query ?? etag else { return document }
        return setting("_rev", to: .string(revision.description), in: document)
    }

    /// The revision `text` names; CouchDB's "Invalid rev format" when it names none.
    static func parsedRevision(_ text: String) throws(CouchError) -> Revision {
        guard let revision = Revision(text) else { throw CouchError.badRequest("Invalid rev format") }
        return revision
    }

    /// An `If-Match` value without its quotes.
    static func unquoted(_ value: String?) -> String? {
        guard var value else { return nil }
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
        return value
    }
}
