import Foundation
import HTTPTypes
import Settee
import HummingbirdCore

/// Which changes a `_changes` request passes, configured as CouchDB's
/// `couch_changes:configure_filter` does: the built-in `_doc_ids`,
/// `_selector`, `_design` and `_view`, or a design document's filter
/// function (`filter=ddoc/name`), run by the JavaScript engine with
/// `(doc, req)` as CouchDB's query server runs it.
struct ChangesFilter: Sendable {
    enum Kind: Sendable {
        case all
        case documentIDs(Set<String>)
        case selector(MangoSelector, fields: [String]?)
        case designDocuments
        /// A change passes when the view's map function emits for the document.
        case view(designID: String, design: JSONValue, name: String)
        /// A design document's `filters` function.
        case function(designID: String, design: JSONValue, name: String, request: JSONValue)
    }

    let kind: Kind
    /// Whose filter calls these are (the database's folder): one database's
    /// slow filters wait behind each other, not in front of another's.
    let tenant: String

    /// Whether deciding needs the documents.
    var needsDocuments: Bool {
        switch kind {
        case .all, .documentIDs, .designDocuments: false
        case .selector, .view, .function: true
        }
    }

    /// The filter `query.filter` names; `body` is a POST's JSON body.
    init(_ query: ChangesQuery, request: CouchRequest, body: JSONValue?, database name: String, db: Database) async throws {
        let filter = query.filter
        tenant = db.url.path
        switch filter {
        case "":
            kind = .all
        case "_doc_ids":
            let ids: JSONValue?
            if request.method == .post {
                ids = body?["doc_ids"]
            } else {
                ids = try request.parameter("doc_ids").map { text throws(CouchError) in
                    do { return try JSONValue(parsing: text) } catch { throw CouchError.invalidJSON }
                }
            }
            guard case .array(let values)? = ids else {
                throw CouchError.badRequest("`doc_ids` filter parameter is not a list of doc ids.")
            }
            var set = Set<String>()
            for value in values {
                guard case .string(let id) = value else {
                    throw CouchError.badRequest("`doc_ids` filter parameter is not a list of doc ids.")
                }
                set.insert(id)
            }
            kind = .documentIDs(set)
        case "_selector":
            guard request.method == .post, let body else {
                throw CouchError.badRequest("Selector must be specified in POST payload")
            }
            guard case .object? = body["selector"], let selector = body["selector"] else {
                throw CouchError.badRequest("Selector error: expected a JSON object")
            }
            let mango: MangoSelector
            do {
                mango = try MangoSelector(selector)
            } catch {
                throw CouchError.badRequest(error.reason)
            }
            var fields: [String]?
            switch body["fields"] {
            case nil, .null?:
                fields = nil
            case .array(let values)?:
                fields = try values.map { value throws(CouchError) in
                    guard case .string(let field) = value else { throw CouchError.badRequest("Selector error: fields must be JSON array") }
                    return field
                }
            default:
                throw CouchError.badRequest("Selector error: fields must be JSON array")
            }
            kind = .selector(mango, fields: fields)
        case "_design":
            kind = .designDocuments
        case "_view":
            guard let path = request.parameter("view"), !path.isEmpty else {
                throw CouchError.badRequest("`view` filter parameter is not provided.")
            }
            let parts = path.split(separator: "/").map(String.init)
            guard parts.count == 2 else {
                throw CouchError.badRequest("`view` must be of the form `designname/viewname`")
            }
            let (id, design) = try await Self.designDocument(parts[0], in: db)
            try Self.requireMember(["views", parts[1]], of: design)
            kind = .view(designID: id, design: design, name: parts[1])
        default:
            if filter.hasPrefix("_") { throw CouchError.badRequest("unknown builtin filter name") }
            let parts = filter.split(separator: "/").map(String.init)
            guard parts.count == 2 else {
                throw CouchError.badRequest("`filter` must be of the form `designname/filtername`")
            }
            let (id, design) = try await Self.designDocument(parts[0], in: db)
            try Self.requireMember(["filters", parts[1]], of: design)
            let requestObject = try await Self.requestObject(request, body: body, database: name, db: db)
            kind = .function(designID: id, design: design, name: parts[1], request: requestObject)
        }
    }

    /// Whether each change passes; `documents` are the changed documents
    /// (deleted ones too) when ``needsDocuments``, in the order of `changes`.
    func passes(_ changes: [Change], documents: [Document?]) async throws -> [Bool] {
        switch kind {
        case .all:
            return changes.map { _ in true }
        case .documentIDs(let ids):
            return changes.map { ids.contains($0.id) }
        case .designDocuments:
            return changes.map { $0.id.hasPrefix("_design") }
        case .selector(let selector, _):
            return try documents.map { document in
                guard let document else { return false }
                return selector.matches(try document.value)
            }
        case .view(let id, let design, let name):
            return try await Self.askQueryServer(documents, design: design, id: id, function: ["views", name, "map"], request: nil, tenant: tenant)
        case .function(let id, let design, let name, let request):
            return try await Self.askQueryServer(documents, design: design, id: id, function: ["filters", name], request: request, tenant: tenant)
        }
    }

    /// The document a change row shows with `include_docs`: only the
    /// selector's `fields` when it names some.
    func shownDocument(_ document: Document) throws -> [UInt8] {
        guard case .selector(_, let fields?) = kind else { return document.jsonBytes }
        return Array(Self.project(try document.value, fields: fields).exactJSONText.utf8)
    }

    private static func askQueryServer(_ documents: [Document?], design: JSONValue, id: String, function: [String],
                                       request: JSONValue?, tenant: String) async throws -> [Bool] {
        var present: [JSONValue] = []
        for document in documents {
            if let document { present.append(try Self.queryServerDocument(document)) }
        }
        var answers = try await DesignFunctionRunner.shared.passes(present, ddoc: design, id: id, function: function,
                                                                   request: request, tenant: tenant)[...]
        return documents.map { document in document == nil ? false : answers.popFirst() ?? false }
    }

    /// A document as CouchDB hands it to the query server: with `_revisions`.
    static func queryServerDocument(_ document: Document) throws -> JSONValue {
        guard case .object(var members) = try document.value else { return try document.value }
        let hash = document.revision.description.split(separator: "-", maxSplits: 1).last.map(String.init) ?? ""
        members.append(("_revisions", ["start": .number(Double(document.revision.generation)), "ids": [.string(hash)]]))
        return .object(members)
    }

    /// The design document `_design/{name}`: 404 `missing` (or `deleted`) when there is none.
    static func designDocument(_ name: String, in db: Database) async throws -> (String, JSONValue) {
        let id = "_design/" + name
        guard let document = try await db.document(id) else {
            let deleted = try await db.documentIncludingDeleted(id)
            throw CouchError(.notFound, "not_found", deleted?.isDeleted == true ? "deleted" : "missing")
        }
        return (id, try document.value)
    }

    /// CouchDB's `couch_util:get_nested_json_value`: 404 `missing json key: …`.
    static func requireMember(_ path: [String], of value: JSONValue) throws(CouchError) {
        var current = value
        for key in path {
            guard case .object = current else { throw CouchError(.notFound, "not_found", "json_mismatch") }
            guard let next = current[key] else { throw CouchError(.notFound, "not_found", "missing json key: \(key)") }
            current = next
        }
    }

    /// The `req` a filter function gets (`chttpd_external:json_req_obj`).
    static func requestObject(_ request: CouchRequest, body: JSONValue?, database name: String, db: Database) async throws -> JSONValue {
        let info = try await db.info()
        var query: [(key: String, value: JSONValue)] = []
        for (key, value) in request.parameters {
            if ["startkey", "endkey", "key", "descending"].contains(key), let parsed = try? JSONValue(parsing: value) {
                query.append((key, parsed))
            } else {
                query.append((key, .string(value)))
            }
        }
        var headers: [(key: String, value: JSONValue)] = []
        for field in request.request.headers {
            headers.append((field.name.rawName, .string(field.value)))
        }
        let rawPath = request.request.uri.path + (request.request.uri.query.map { "?" + $0 } ?? "")
        let segments = JSONValue.array(request.segments.map(JSONValue.string))
        return [
            "info": ["db_name": .string(name), "update_seq": .string(String(info.updateSequence)),
                     "doc_count": .number(Double(info.documentCount)), "doc_del_count": .number(Double(info.deletedDocumentCount))],
            "uuid": .string(CouchAPI.newUUID()),
            "id": .null,
            "method": .string(request.method.rawValue),
            "requested_path": segments,
            "path": segments,
            "raw_path": .string(rawPath),
            "query": .object(query),
            "headers": .object(headers),
            "body": body ?? "undefined",
            "peer": .string(request.peer),
            "form": [:],
            "cookie": [:],
            "userCtx": ["db": .string(name), "name": request.user.name.map(JSONValue.string) ?? .null,
                        "roles": .array(request.user.roles.map(JSONValue.string))],
            "secObj": request.securityObject,
        ]
    }

    /// `mango_fields:extract`: the named (dotted) fields of `document`, in
    /// the order named, missing ones left out.
    static func project(_ document: JSONValue, fields: [String]) -> JSONValue {
        var result = JSONValue.object([])
        for field in fields {
            let path = field.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            var value: JSONValue? = document
            for key in path { value = value?[key] }
            if let value { result = set(value, at: path[...], in: result) }
        }
        return result
    }

    private static func set(_ value: JSONValue, at path: ArraySlice<String>, in target: JSONValue) -> JSONValue {
        guard let key = path.first, case .object(var members) = target else { return value }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = set(value, at: path.dropFirst(), in: members[index].value)
        } else {
            members.append((key, set(value, at: path.dropFirst(), in: .object([]))))
        }
        return .object(members)
    }
}
