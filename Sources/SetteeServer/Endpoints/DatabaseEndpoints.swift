import Foundation
import HTTPTypes
import Hummingbird
import Settee
import SetteeStorage

/// `/{db}` and the database's `_` endpoints.
extension CouchAPI {
    func databaseEndpoint(_ name: String, _ request: inout CouchRequest) async throws -> Response {
        switch request.method {
        case .put:
            try databases.create(name, partitioned: try Self.partitionedParameter(request))
            if case .users? = databases.systemDatabase(name) {
                // `_design/_auth` in it, and in the authentication database (CouchDB's auth cache does so when a users database appears).
                for users in Set([name, config.settings.authenticationDatabase]) { AuthDesignDocument.ensure(in: users, of: databases, logger: logger) }
            }
            return CouchResponse.json(.created, ["ok": true], headers: [.location: "/\(Self.escapePath(name))"])
        case .get, .head:
            return CouchResponse.json(try await databaseInfo(name))
        case .delete:
            if request.parameter("rev") != nil {
                throw CouchError.badRequest("You tried to DELETE a database with a ?=rev parameter. Did you mean to DELETE a document instead?")
            }
            try databases.delete(name)
            return CouchResponse.ok()
        case .post:
            let db = try databases.database(name)
            var document = try await request.documentBody(id: nil)
            if document["_id"] == nil { document = Self.setting("_id", to: .string(newDocumentID()), in: document) }
            document = try await preparedForWrite(document, database: name, request: request)
            let written = try await db.put(document.exactJSONText)
            return CouchResponse.json(.created, Self.writeResult(written),
                                      headers: [.location: "/\(Self.escapePath(name))/\(Self.escapePath(written.id))",
                                                .eTag: CouchResponse.etag(written.revision)])
        default:
            throw CouchError.methodNotAllowed("DELETE,GET,HEAD,POST,PUT")
        }
    }

    /// `GET /{db}` as CouchDB answers it.
    func databaseInfo(_ name: String) async throws -> JSONValue {
        let db = try databases.database(name)
        let info = try await db.info()
        let purgeSequence = try await db.purgeSequence()
        return [
            "db_name": .string(name),
            "purge_seq": .string(String(purgeSequence)),
            "update_seq": .string(String(info.updateSequence)),
            "sizes": ["file": .number(Double(info.fileSize)), "external": .number(Double(info.fileSize)),
                      "active": .number(Double(info.fileSize))],
            "props": try await db.properties(),
            "doc_del_count": .number(Double(info.deletedDocumentCount)),
            "doc_count": .number(Double(info.documentCount)),
            "disk_format_version": 8,
            "compact_running": false,
            "cluster": ["q": 1, "n": 1, "w": 1, "r": 1],
            "instance_start_time": "0",
        ]
    }

    func databaseOperation(_ name: String, _ operation: String, _ request: inout CouchRequest) async throws -> Response {
        let db = try databases.database(name)
        if let response = try await feedAndBulkReadOperation(name, db, operation, &request) { return response }
        switch operation {
        case "_all_docs", "_design_docs", "_local_docs":
            try allow(request, "GET,HEAD,POST")
            let body = request.method == .post ? try await request.jsonObjectBody() : nil
            // chttpd_db: a POST's `keys` member is checked before the query's options.
            if let keys = body["keys"], keys != .null, keys.arrayValue == nil {
                throw CouchError.badRequest("`keys` body member must be an array.")
            }
            let options = try Self.viewOptions(request.parameters, body: body)
            if operation == "_design_docs" { return CouchResponse.json(text: try await designDocuments(db, options).json) }
            if operation == "_local_docs" { return CouchResponse.json(text: try await localDocuments(db, options).exactJSONText) }
            return CouchResponse.json(text: try await db.allDocuments(options: options).json)
        case "_bulk_docs":
            try allow(request, "POST")
            return try await bulkDocuments(db, &request, name: name)
        case "_find", "_explain":
            try allow(request, "POST")
            try request.requireContentType()
            let body = try await request.jsonObjectBody().lastMemberWins
            try FindRequest.refuseIntegersWrittenAsFloats(jsonText: try await request.decodedBodyBytes())
            let find = try FindRequest(json: body)
            if operation == "_explain" { return CouchResponse.json(try await db.explain(find)) }
            return CouchResponse.json(text: try await db.find(find).jsonText)
        case "_index":
            return try await indexEndpoint(db, &request)
        case "_ensure_full_commit":
            try allow(request, "POST")
            return CouchResponse.json(.created, ["ok": true, "instance_start_time": "0"])
        case "_compact":
            // The bodies of earlier revisions go (kept since their edits, as CouchDB keeps them until compaction).
            try allow(request, "POST")
            try await db.compact()
            return CouchResponse.json(.accepted, ["ok": true])
        case "_view_cleanup":
            try allow(request, "POST")
            return CouchResponse.json(.accepted, ["ok": true])
        default:
            throw CouchError(.notFound, "not_found", "missing")
        }
    }

    /// `POST /{db}/_bulk_docs`: every document written in one transaction,
    /// each with its own result (an error for one does not stop the others).
    func bulkDocuments(_ db: Database, _ request: inout CouchRequest, name: String) async throws -> Response {
        let body = try await request.jsonObjectBody()
        guard case .array(let documents)? = body["docs"] else {
            throw CouchError.badRequest("POST body must include `docs` parameter.")
        }
        try Self.checkDocumentIDs(documents, partitioned: try await db.isPartitioned())
        if body["new_edits"] == .bool(false) { return try await bulkReplicatedDocuments(name, db, documents, &request) }
        let (prepared, refused) = try await preparedForWrite(documents, database: name, request: request)
        let texts = try prepared.map { document throws(CouchError) -> (id: String?, text: String) in
            guard case .object = document else { throw CouchError.badRequest("Document must be a JSON object") }
            var document = document
            if document["_id"] == nil { document = Self.setting("_id", to: .string(newDocumentID()), in: document) }
            return (document["_id"]?.stringValue, document.exactJSONText)
        }
        let results = try await db.write { batch in
            texts.enumerated().map { index, entry -> JSONValue in
                if let refusal = refused[index] { return refusal }
                do {
                    return Self.writeResult(try batch.put(entry.text))
                } catch {
                    let couchError = CouchError(from: error)
                    return ["id": entry.id.map(JSONValue.string) ?? .null, "error": .string(couchError.error),
                            "reason": .string(couchError.reason)]
                }
            }
        }
        return CouchResponse.json(.created, .array(results))
    }

    /// `GET /{db}/_design_docs`: `_all_docs` within the design documents'
    /// ids (`_design/` up to `_design0`), the range asked for kept inside
    /// them, `keys` that are not design documents' left out; `total_rows`
    /// counts the design documents, as CouchDB's.
    func designDocuments(_ db: Database, _ asked: ViewQueryOptions) async throws -> ViewResult {
        let low = "_design/", high = "_design0"
        func bytes(_ value: JSONValue?) -> [UInt8]? { value?.stringValue.map { Array($0.utf8) } }
        var options = asked
        if let keys = options.keys {
            options.keys = keys.filter { $0.stringValue?.hasPrefix(low) == true }
        } else if let key = options.key {
            if key.stringValue?.hasPrefix(low) != true { options.keys = [] }
        } else if options.descending {
            if !(bytes(options.startKey).map { $0.lexicographicallyPrecedes(Array(high.utf8)) } ?? false) { options.startKey = .string(high) }
            if !(bytes(options.endKey).map { Array(low.utf8).lexicographicallyPrecedes($0) } ?? false) {
                options.endKey = .string(low)
                options.inclusiveEnd = true
            }
        } else {
            if !(bytes(options.startKey).map { Array(low.utf8).lexicographicallyPrecedes($0) } ?? false) { options.startKey = .string(low) }
            if !(bytes(options.endKey).map { $0.lexicographicallyPrecedes(Array(high.utf8)) } ?? false) {
                options.endKey = .string(high)
                options.inclusiveEnd = false
            }
        }
        var result = try await db.allDocuments(options: options)
        var all = ViewQueryOptions()
        all.startKey = .string(low)
        all.endKey = .string(high)
        all.inclusiveEnd = false
        result.totalRows = try await db.allDocuments(options: all).rows.count
        return result
    }

    /// `GET /{db}/_local_docs`: the local documents as `_all_docs` lists
    /// documents (ids in byte order, `startkey`/`endkey`, `inclusive_end`,
    /// `descending`, `skip`, `limit`, `keys`, `include_docs`), with
    /// `total_rows` and `offset` null, as CouchDB's.
    func localDocuments(_ db: Database, _ options: ViewQueryOptions) async throws -> JSONValue {
        let documents = try await db.localDocuments()
        func row(_ document: Document) throws -> JSONValue {
            var members: [(key: String, value: JSONValue)] = [("id", .string(document.id)), ("key", .string(document.id)),
                                                               ("value", ["rev": .string(document.revision.description)])]
            if options.includeDocs { members.append(("doc", try document.value)) }
            return .object(members)
        }
        var rows: [JSONValue] = []
        if let keys = options.keys ?? options.key.map({ [$0] }) {
            let byID = Dictionary(documents.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            for key in keys {
                if let id = key.stringValue, let document = byID[id] { rows.append(try row(document)) } else { rows.append(["key": key, "error": "not_found"]) }
            }
        } else {
            func bytes(_ value: JSONValue?) -> [UInt8]? { value?.stringValue.map { Array($0.utf8) } }
            var listed = options.descending ? documents.reversed() : documents
            let start = bytes(options.startKey), end = bytes(options.endKey)
            listed = listed.filter { document in
                let id = Array(document.id.utf8)
                // In the listing's direction: at or after the start, before (or at, when inclusive) the end.
                func before(_ a: [UInt8], _ b: [UInt8]) -> Bool { options.descending ? b.lexicographicallyPrecedes(a) : a.lexicographicallyPrecedes(b) }
                if let start, before(id, start) { return false }
                if let end, before(end, id) || (!options.inclusiveEnd && id == end) { return false }
                return true
            }
            rows = try listed.map(row)
        }
        rows = Array(rows.dropFirst(max(0, options.skip)).prefix(max(0, options.limit ?? Int.max)))
        var result: [(key: String, value: JSONValue)] = [("total_rows", .null), ("offset", .null)]
        if options.updateSeq { result.append(("update_seq", .null)) }
        result.append(("rows", .array(rows)))
        return .object(result)
    }

    /// Refuses a whole `_bulk_docs` request (400, nothing written) when a
    /// document's `_id` is not one CouchDB accepts, or in a partitioned
    /// database is not `partition:id`, as `couch_doc:from_json_obj_validate`
    /// refuses it before any write.
    static func checkDocumentIDs(_ documents: [JSONValue], partitioned: Bool) throws {
        for document in documents {
            guard let value = document["_id"] else { continue }
            guard case .string(let id) = value else { throw CouchError(.badRequest, "illegal_docid", "Document id must be a string") }
            do {
                try DocumentEdit.validate(id: id)
            } catch {
                throw CouchError(.badRequest, "illegal_docid", error.reason)
            }
            if partitioned { try Partition.validateDocumentID(id) }
        }
    }

    /// `{"ok": true, "id": …, "rev": …}`.
    static func writeResult(_ written: WriteResult) -> JSONValue {
        ["ok": true, "id": .string(written.id), "rev": .string(written.revision.description)]
    }

    /// `document` with member `name` set to `value` (replaced in place, or added first).
    static func setting(_ name: String, to value: JSONValue, in document: JSONValue) -> JSONValue {
        guard case .object(var members) = document else { return document }
        if let index = members.firstIndex(where: { $0.key == name }) {
            members[index].value = value
        } else {
            members.insert((name, value), at: 0)
        }
        return .object(members)
    }

    /// A view query's options given in a POST body (`{"keys": […], "limit": 2, …}`)
    /// with the query string's applied over them (`?limit=1` wins over a
    /// body's `"limit": 2`), as `couch_mrview_http` merges them.
    static func viewOptions(_ query: [(name: String, value: String)], body: JSONValue?) throws -> ViewQueryOptions {
        guard case .object(let members)? = body else { return try ViewQueryOptions(parameters: query) }
        // The body's members first, then the query string's, which win (couch_mrview_http:parse_body_and_query/3).
        var parameters: [(name: String, value: String)] = []
        for (name, value) in members {
            switch (name, value) {
            case ("startkey_docid", .string(let text)), ("start_key_doc_id", .string(let text)),
                 ("endkey_docid", .string(let text)), ("end_key_doc_id", .string(let text)),
                 ("stale", .string(let text)), ("update", .string(let text)):
                parameters.append((name, text))
            default:
                parameters.append((name, value.jsonText))
            }
        }
        return try ViewQueryOptions(parameters: parameters + query)
    }

    /// A path segment with `/` and other reserved characters percent-encoded.
    static func escapePath(_ segment: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
    }
}
