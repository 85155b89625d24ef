import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/{db}/_changes`, `_bulk_get`, `_all_docs/queries`, `_purge`,
/// `_purged_infos_limit` and `_revs_limit`.
extension CouchAPI {
    /// Answers this file's operations; nil for the others.
    func feedAndBulkReadOperation(_ name: String, _ db: Database, _ operation: String,
                                  _ request: inout CouchRequest) async throws -> Response? {
        let rest = request.segments.dropFirst(2)
        switch (operation, rest.count) {
        case ("_changes", 0):
            return try await changesEndpoint(name, db, &request)
        case ("_bulk_get", 0):
            try allow(request, "POST")
            return try await bulkGet(db, &request)
        case ("_all_docs", 1) where rest.first == "queries":
            try allow(request, "POST")
            let body = try await request.jsonObjectBody()
            return try await multipleQueries(body, request.parameters) { options in
                try await db.allDocuments(options: options).json
            }
        case ("_purge", 0):
            try allow(request, "POST")
            return try await purge(db, &request)
        case ("_revs_diff", 0), ("_missing_revs", 0):
            return try await revisionsDifference(db, operation, &request)
        case ("_purged_infos_limit", 0), ("_revs_limit", 0):
            return try await databaseLimit(name, operation, &request)
        default:
            return nil
        }
    }

    /// `POST /{db}/_design/{ddoc}/_view/{view}/queries`.
    func viewQueries(_ db: Database, _ designName: String, _ view: String, _ request: inout CouchRequest) async throws -> Response {
        try allow(request, "POST")
        let body = try await request.jsonObjectBody()
        return try await multipleQueries(body, request.parameters) { options in
            try await db.query(designDocument: designName, view: view, options: options).json
        }
    }

    /// `{"queries": [{…}, …]}` → `{"results": [{…}, …]}`: each query's
    /// options over the query string's, as `couch_mrview_http` merges them.
    func multipleQueries(_ body: JSONValue, _ parameters: [(name: String, value: String)],
                         _ run: (ViewQueryOptions) async throws -> String) async throws -> Response {
        guard case .array(let queries)? = body["queries"] else {
            throw CouchError.badRequest("POST body must include `queries` parameter.")
        }
        var results: [String] = []
        for query in queries {
            guard case .object = query else { throw CouchError.badRequest("Request body must be a JSON object") }
            results.append(try await run(try Self.viewOptions(parameters, body: query)))
        }
        return CouchResponse.json(text: "{\"results\":[" + results.joined(separator: ",") + "]}")
    }

    /// `POST /{db}/_bulk_get`: for each `{id, rev?, atts_since?}`, the
    /// document (`{"ok": doc}`) or why not (`{"error": {…}}`).
    func bulkGet(_ db: Database, _ request: inout CouchRequest) async throws -> Response {
        for (name, _) in request.parameters where ["open_revs", "new_edits", "w", "rev", "atts_since"].contains(name) {
            throw CouchError.badRequest("\"\(name)\" query parameter is not acceptable")
        }
        let options = try DocumentReadOptions(request.parameters)
        let body = try await request.jsonObjectBody()
        guard case .array(let entries)? = body["docs"] else {
            throw CouchError.badRequest("Missing JSON list of 'docs'.")
        }
        var results: [String] = []
        for entry in entries {
            let (id, docs) = try await bulkGetResult(db, entry, options: options)
            results.append("{\"docs\":[\(docs)],\"id\":\(id.jsonText)}")
        }
        return CouchResponse.json(text: "{\"results\":[" + results.joined(separator: ",") + "]}")
    }

    /// One `_bulk_get` entry's `id` and `docs` (the text inside the array).
    private func bulkGetResult(_ db: Database, _ entry: JSONValue, options: DocumentReadOptions) async throws -> (JSONValue, String) {
        func error(_ id: JSONValue, _ rev: JSONValue, _ error: String, _ reason: String) -> (JSONValue, String) {
            // Members in the order CouchDB's map encodes them.
            let json: JSONValue = ["error": ["error": .string(error), "id": id, "reason": .string(reason), "rev": rev]]
            return (id, json.jsonText)
        }
        guard case .object(let members) = entry, !members.isEmpty else {
            return error(.null, .null, "bad_request", "document must be a JSON object")
        }
        guard let idValue = entry["id"] else { return error(.null, .null, "bad_request", "document id missed") }
        guard case .string(let id) = idValue, !id.isEmpty else {
            return error(idValue, .null, "illegal_docid", "Document id must be a string")
        }
        if id.hasPrefix("_"), !id.hasPrefix("_design/"), !id.hasPrefix("_local/") {
            return error(idValue, .null, "illegal_docid", "Only reserved document ids may start with underscore.")
        }
        var rev: Revision?
        if let revValue = entry["rev"] {
            guard case .string(let text) = revValue, let parsed = Revision(text) else {
                return error(idValue, revValue, "bad_request", "Invalid rev format")
            }
            rev = parsed
        }
        var documentOptions = options
        switch entry["atts_since"] {
        case nil, .null?:
            break
        case .array(let values)?:
            var since: [Revision] = []
            for value in values {
                guard case .string(let text) = value, let revision = Revision(text) else {
                    return error(idValue, value, "bad_request", "Invalid rev format")
                }
                since.append(revision)
            }
            if !since.isEmpty { documentOptions.attachmentsSince = since }
        case let other?:
            return error(idValue, other, "bad_request", "att_since value must be array of revs.")
        }
        var document = try await read(db, id: id, options: documentOptions)
        if document == nil { document = try await readIncludingDeleted(db, id: id, options: documentOptions) }
        if let rev, let current = document, current.revision != rev,
           let leaf = try await leaf(db, id: id, revision: rev, current: current, options: documentOptions) {
            document = leaf
        }
        let revText: JSONValue = rev.map { .string($0.description) } ?? "undefined"
        guard let document, rev == nil || rev == document.revision || (options.latest && document.revision.generation >= rev!.generation) else {
            return error(idValue, revText, "not_found", "missing")
        }
        return (idValue, "{\"ok\":\(String(decoding: try await documentBytes(db, document, options: documentOptions), as: UTF8.self))}")
    }

    /// `POST /{db}/_purge`: `{"id": ["rev", …], …}` → `{"purge_seq": null, "purged": {"id": ["rev", …]}}`.
    func purge(_ db: Database, _ request: inout CouchRequest) async throws -> Response {
        let body = try await request.jsonObjectBody()
        guard case .object(let members) = body else { throw CouchError.badRequest("Request body must be a JSON object") }
        guard members.count <= 100 else { throw CouchError.badRequest("Exceeded maximum number of documents.") }
        var requests: [(id: String, revisions: [Revision])] = []
        let partitioned = try await db.isPartitioned()
        for (id, value) in members {
            if partitioned { try Partition.validateDocumentID(id) }
            guard case .array(let values) = value else { throw CouchError.badRequest("Invalid revision list") }
            let revisions = try values.map { value throws(CouchError) in
                guard case .string(let text) = value, let revision = Revision(text) else {
                    throw CouchError.badRequest("Invalid rev format")
                }
                return revision
            }
            requests.append((id, revisions))
        }
        guard requests.reduce(0, { $0 + $1.revisions.count }) <= 1000 else {
            throw CouchError.badRequest("Exceeded maximum number of revisions.")
        }
        var asked: [String: [Revision]] = [:]
        for request in requests { asked[request.id, default: []] += request.revisions }
        let result = try await db.purge(asked)
        var purged: [(key: String, value: JSONValue)] = []
        var seen = Set<String>()
        for request in requests where seen.insert(request.id).inserted {
            purged.append((request.id, .array((result.purged[request.id] ?? []).map { .string($0.description) })))
        }
        return CouchResponse.json(.created, ["purge_seq": .null, "purged": .object(purged)])
    }
}
