import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// What `GET /{db}/{docid}` (and `_bulk_get`) may ask of a document, as
/// CouchDB's `chttpd_db:parse_doc_query` reads it. Settee keeps one
/// revision per document: its history is that revision, it has no
/// conflicts, and `latest` is the current revision.
struct DocumentReadOptions: Sendable {
    var revs = false
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
        revs || revsInfo || localSeq || deleted || latest || openRevisions != nil
    }

    init() {}

    init(_ parameters: [(name: String, value: String)]) throws(CouchError) {
        for (name, value) in parameters {
            switch (name, value) {
            case ("attachments", "true"): attachments = true
            case ("meta", "true"): revsInfo = true
            case ("revs", "true"): revs = true
            case ("local_seq", "true"): localSeq = true
            case ("revs_info", "true"): revsInfo = true
            case ("deleted", "true"): deleted = true
            case ("latest", "true"): latest = true
            case ("rev", _):
                guard let revision = Revision(value) else { throw CouchError.badRequest("Invalid rev format") }
                rev = revision
            case ("open_revs", "all"):
                openRevisions = .all
            case ("open_revs", _):
                openRevisions = .some(try Self.revisionList(value))
            case ("atts_since", _):
                attachmentsSince = try Self.revisionList(value).map { text throws(CouchError) in
                    guard let revision = Revision(text) else { throw CouchError.badRequest("Invalid rev format") }
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

    /// The document as JSON with the members asked for (`_revisions`,
    /// `_revs_info`, `_local_seq`), after its own as CouchDB's `couch_doc:to_json_obj` adds them.
    func json(of document: Document) throws -> JSONValue {
        guard revs || revsInfo || localSeq, case .object(var members) = try document.value else { return try document.value }
        if revs {
            let hash = document.revision.description.split(separator: "-", maxSplits: 1).last.map(String.init) ?? ""
            members.append(("_revisions", ["start": .number(Double(document.revision.generation)), "ids": [.string(hash)]]))
        }
        if revsInfo {
            members.append(("_revs_info", [["rev": .string(document.revision.description),
                                             "status": document.isDeleted ? "deleted" : "available"]]))
        }
        if localSeq { members.append(("_local_seq", .number(Double(document.sequence)))) }
        return .object(members)
    }

    /// The document's JSON bytes: as stored when nothing is added.
    func bytes(of document: Document) throws -> [UInt8] {
        guard revs || revsInfo || localSeq else { return document.jsonBytes }
        return Array(try json(of: document).jsonText.utf8)
    }
}

/// `GET /{db}/{docid}` with `revs`, `revs_info`, `local_seq`, `meta`,
/// `open_revs`, `latest`, `deleted`; `COPY /{db}/{docid}`.
extension CouchResponder {
    /// Answers the reads the plain `documentEndpoint` does not, and COPY; nil for the others.
    func documentReadOrCopy(_ name: String, id: String, _ request: inout CouchRequest) async throws -> Response? {
        if request.method.rawValue == "COPY" { return try await copyDocument(name, id: id, &request) }
        guard request.method == .get || request.method == .head else { return nil }
        let options = try DocumentReadOptions(request.parameters)
        guard options.changesTheDocument else { return nil }
        let db = try databases.database(name)
        if let open = options.openRevisions {
            return try await openRevisions(db, id: id, open, options: options)
        }
        var document = try await read(db, id: id, options: options)
        if document == nil, options.deleted {
            document = try await db.documentIncludingDeleted(id)
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
        buffer.writeBytes(try options.bytes(of: document))
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

    /// `open_revs`: a JSON array of `{"ok": doc}` and `{"missing": rev}`,
    /// as CouchDB answers a client that does not ask for multipart.
    private func openRevisions(_ db: Database, id: String, _ open: DocumentReadOptions.OpenRevisions,
                               options: DocumentReadOptions) async throws -> Response {
        var current = try await read(db, id: id, options: options)
        if current == nil { current = try await db.documentIncludingDeleted(id) }
        var results: [String] = []
        switch open {
        case .all:
            guard let current else { throw CouchError.missing }
            results.append("{\"ok\":\(String(decoding: try options.bytes(of: current), as: UTF8.self))}")
        case .some(let revisions):
            for text in revisions {
                let revision = Revision(text)!
                if let current, current.revision == revision || (options.latest && current.revision.generation >= revision.generation) {
                    results.append("{\"ok\":\(String(decoding: try options.bytes(of: current), as: UTF8.self))}")
                } else {
                    results.append("{\"missing\":\(JSONValue.string(text).jsonText)}")
                }
            }
        }
        return CouchResponse.json(text: "[" + results.joined(separator: ",") + "]")
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
        targetID = targetID.removingPercentEncoding ?? targetID
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
        let written = try await db.put(JSONValue.object(members).jsonText)
        return CouchResponse.json(.created, Self.writeResult(written),
                                  headers: [.location: "/\(Self.escapePath(name))/\(Self.escapePath(written.id))",
                                            .eTag: CouchResponse.etag(written.revision)])
    }
}
