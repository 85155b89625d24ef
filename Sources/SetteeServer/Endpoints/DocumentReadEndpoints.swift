import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// What `GET /{db}/{docid}` (and `_bulk_get`) may ask of a document, as
/// CouchDB's `chttpd_db:parse_doc_query` reads it.
struct DocumentReadOptions: Sendable {
    var revs = false
    var conflicts = false
    var deletedConflicts = false
    var revsInfo = false
    var localSeq = false
    var attachments = false
    var deleted = false
    var latest = false
    var rev: Revision?
    /// `open_revs`: nil when not asked; `all`, or the revisions named.
    var openRevisions: OpenRevisions?
    var attachmentsSince: [Revision]?

    enum OpenRevisions: Sendable {
        case all
        case some([String])
    }

    /// Whether anything here needs more than the plain read of `DocumentEndpoints`.
    var changesTheDocument: Bool {
        revs || revsInfo || localSeq || deleted || latest || openRevisions != nil || conflicts || deletedConflicts || rev != nil
    }

    init() {}

    init(_ parameters: [(name: String, value: String)]) throws(CouchError) {
        for (name, value) in parameters {
            switch (name, value) {
            case ("attachments", "true"): attachments = true
            case ("meta", "true"): (revsInfo, conflicts, deletedConflicts) = (true, true, true)
            case ("conflicts", "true"): conflicts = true
            case ("deleted_conflicts", "true"): deletedConflicts = true
            case ("revs", "true"): revs = true
            case ("local_seq", "true"): localSeq = true
            case ("revs_info", "true"): revsInfo = true
            case ("deleted", "true"): deleted = true
            case ("latest", "true"): latest = true
            case ("rev", _):
                let revision = try CouchAPI.parsedRevision(value)
                rev = revision
            case ("open_revs", "all"):
                openRevisions = .all
            case ("open_revs", _):
                openRevisions = .some(try Self.revisionList(value))
            case ("atts_since", _):
                attachmentsSince = try Self.revisionList(value).map { text throws(CouchError) in
                    let revision = try CouchAPI.parsedRevision(text)
                    return revision
                }
            default:
                continue
            }
        }
    }

    /// A JSON array of revisions (`["1-abc", …]`).
    static func revisionList(_ text: String) throws(CouchError) -> [String] {
        guard let parsed = try? JSONValue(parsing: text) else { throw CouchError.invalidJSON }
        guard case .array(let values) = parsed else { throw CouchError.badRequest("Invalid revision list") }
        return try values.map { value throws(CouchError) in
            guard case .string(let text) = value, Revision(text) != nil else { throw CouchError.badRequest("Invalid rev format") }
            return text
        }
    }

    /// The document as JSON with the members asked for that need no other
    /// revision (`_revisions` and `_revs_info` of this one, `_local_seq`).
    func json(of document: Document) throws -> JSONValue {
        try json(of: document, revisions: nil)
    }

    /// The document's JSON bytes: as stored when nothing is added.
    func bytes(of document: Document) throws -> [UInt8] {
        try bytes(of: document, revisions: nil)
    }
}

/// `GET /{db}/{docid}` with `revs`, `revs_info`, `local_seq`, `meta`,
/// `open_revs`, `latest`, `deleted`; `COPY /{db}/{docid}`.
extension CouchAPI {
    /// Answers the reads the plain `documentEndpoint` does not, and COPY; nil for the others.
    func documentReadOrCopy(_ name: String, id: String, _ request: inout CouchRequest) async throws -> Response? {
        if request.method.rawValue == "COPY" { return try await copyDocument(name, id: id, &request) }
        guard request.method == .get || request.method == .head else { return nil }
        let options = try DocumentReadOptions(request.parameters)
        guard options.changesTheDocument else { return nil }
        let db = try databases.database(name)
        if let open = options.openRevisions {
            if request.header(.accept)?.lowercased().contains("multipart/mixed") == true {
                // As CouchDB sends them to a replicator: every attachment's bytes (since atts_since) as parts.
                var withAttachments = options
                withAttachments.attachments = true
                let results = try await openRevisionResults(db, id: id, open, options: withAttachments)
                return try await OpenRevisionsMultipart.response(results, db: db, id: id)
            }
            return try await openRevisions(db, id: id, open, options: options)
        }
        var document = try await read(db, id: id, options: options)
        if document == nil, options.deleted || options.rev != nil {
            document = try await readIncludingDeleted(db, id: id, options: options)
        }
        // rev= of a losing leaf (latest=true opens the winner whatever rev names).
        if let rev = options.rev, !options.latest, let current = document, current.revision != rev {
            document = try await leaf(db, id: id, revision: rev, current: current, options: options)
            if document == nil { throw CouchError.missing }
        }
        guard let document else {
            let deleted = try await db.documentIncludingDeleted(id)
            throw CouchError(.notFound, "not_found", deleted?.isDeleted == true ? "deleted" : "missing")
        }
        // latest=true opens the current revision whatever rev names.
        if let rev = options.rev, !options.latest, rev != document.revision { throw CouchError.missing }
        let etag = CouchResponse.etag(document.revision)
        if request.header(.ifNoneMatch) == etag { return Response(status: .notModified, headers: [.eTag: etag]) }
        var buffer = ByteBuffer()
        buffer.writeBytes(try await documentBytes(db, document, options: options))
        buffer.writeInteger(UInt8(ascii: "\n"))
        return CouchResponse.json(buffer: buffer, headers: [.eTag: etag])
    }

    /// The live document, with its attachments' data when asked.
    func read(_ db: Database, id: String, options: DocumentReadOptions) async throws -> Document? {
        if options.attachments || options.attachmentsSince != nil {
            return try await db.document(id, attachments: true, since: options.attachmentsSince)
        }
        return try await db.document(id)
    }

    /// The current revision, deleted or not, with its attachments' data when
    /// asked (a tombstone keeps the attachments its deletion named).
    func readIncludingDeleted(_ db: Database, id: String, options: DocumentReadOptions) async throws -> Document? {
        if options.attachments || options.attachmentsSince != nil {
            return try await db.documentIncludingDeleted(id, attachments: options.attachmentsSince)
        }
        return try await db.documentIncludingDeleted(id)
    }

    /// `open_revs`: a JSON array of `{"ok": doc}` and `{"missing": rev}`,
    /// as CouchDB answers a client that does not ask for multipart.
    private func openRevisions(_ db: Database, id: String, _ open: DocumentReadOptions.OpenRevisions,
                               options: DocumentReadOptions) async throws -> Response {
        let results = try await openRevisionResults(db, id: id, open, options: options)
        return CouchResponse.json(text: "[" + results.map(\.jsonText).joined(separator: ",") + "]")
    }

    /// The leaves `open` names, or `{"missing": rev}` for each it cannot find.
    private func openRevisionResults(_ db: Database, id: String, _ open: DocumentReadOptions.OpenRevisions,
                                     options: DocumentReadOptions) async throws -> [OpenRevision] {
        var current = try await read(db, id: id, options: options)
        if current == nil { current = try await readIncludingDeleted(db, id: id, options: options) }
        switch open {
        case .all:
            guard let current else { throw CouchError.missing }
            return try await openAllRevisions(db, id: id, current: current, options: options)
        case .some(let revisions):
            var results: [OpenRevision] = []
            for text in revisions {
                results += try await openNamedRevision(db, id: id, text, current: current, options: options)
            }
            return results
        }
    }

    /// `COPY /{db}/{docid}` with `Destination: target` or `target?rev=…`:
    /// the document (attachments too) written under the target id.
    private func copyDocument(_ name: String, id: String, _ request: inout CouchRequest) async throws -> Response {
        let db = try databases.database(name)
        guard let destination = request.header(HTTPField.Name("Destination")!), !destination.isEmpty else {
            throw CouchError.badRequest("Destination header is mandatory for COPY.")
        }
        if destination.contains("://") { throw CouchError.badRequest("Destination URL must be relative.") }
        var targetID = destination
        var targetRevision: String?
        if let question = destination.firstIndex(of: "?") {
            targetID = String(destination[..<question])
            let query = CouchRequest.parseQuery(String(destination[destination.index(after: question)...]))
            guard let rev = query.first(where: { $0.name == "rev" })?.value else {
                throw CouchError.badRequest("Invalid revision format in Destination header.")
            }
            targetRevision = rev
        }
        targetID = PercentDecoding.decode(targetID[...]) ?? targetID
        let sourceRevision = request.parameter("rev") ?? Self.unquoted(request.header(.ifMatch))
        guard let source = try await db.document(id, attachments: true) else {
            let deleted = try await db.documentIncludingDeleted(id)
            throw CouchError(.notFound, "not_found", deleted?.isDeleted == true ? "deleted" : "missing")
        }
        if let sourceRevision, sourceRevision != source.revision.description { throw CouchError.missing }
        guard case .object(var members) = try source.value else { throw CouchError.missing }
        members.removeAll { $0.key == "_id" || $0.key == "_rev" }
        members.insert(("_id", .string(targetID)), at: 0)
        if let targetRevision { members.insert(("_rev", .string(targetRevision)), at: 1) }
        let copy = try await preparedForWrite(.object(members), database: name, request: request)
        let written = try await db.put(copy.exactJSONText)
        return CouchResponse.json(.created, Self.writeResult(written),
                                  headers: [.location: "/\(Self.escapePath(name))/\(Self.escapePath(written.id))",
                                            .eTag: CouchResponse.etag(written.revision)])
    }
}
