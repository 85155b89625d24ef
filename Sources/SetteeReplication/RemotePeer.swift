import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Settee
import SetteeCore

/// A database on a CouchDB server as one end of a replication, spoken to
/// over HTTP as CouchDB's replicator speaks: `_changes?style=all_docs`,
/// `_revs_diff`, `_bulk_get?revs=true&attachments=true&latest=true`,
/// `_bulk_docs` with `new_edits: false`, `_local/` checkpoints. Requests that
/// fail for a transient reason (a lost connection, a 5xx) are tried again
/// up to `retries` times, waiting longer each time.
struct RemotePeer: ReplicationPeer {
    let database: RemoteDatabase
    let client: HTTPClient
    let retries: Int

    var name: String { database.description }

    /// The largest answer read into memory (a `_bulk_get` batch with its attachments).
    static let largestResponse = 1 << 31

    func info() async throws -> PeerInfo? {
        let (status, body) = try await send(.GET, "")
        if status == 404 { return nil }
        try check(status, body, "GET /")
        return PeerInfo(updateSequence: body["update_seq"] ?? 0,
                        instanceStartTime: body["instance_start_time"]?.stringValue ?? "0")
    }

    func create() async throws {
        let (status, body) = try await send(.PUT, "")
        if status == 412 { return }
        try check(status, body, "PUT (create the database)")
    }

    func replicationIDTerm() -> ErlangTermWriter.Term { ReplicationID.term(of: .remote(database)) }

    func serverUUID() async throws -> String? {
        let (status, body) = try await send(.GET, nil)
        guard status == 200 else { return nil }
        return body["uuid"]?.stringValue
    }

    func filterSource(_ name: String) async throws -> String? {
        guard let slash = name.firstIndex(of: "/") else { return nil }
        let (status, body) = try await send(.GET, "_design/" + Self.escape(String(name[..<slash])))
        guard status == 200 else { return nil }
        return body["filters"]?[String(name[name.index(after: slash)...])]?.stringValue
    }

    func localDocument(_ id: String) async throws -> JSONValue? {
        let (status, body) = try await send(.GET, "_local/" + Self.escape(String(id.dropFirst("_local/".count))))
        if status == 404 { return nil }
        try check(status, body, "GET \(id)")
        return body
    }

    func putLocalDocument(_ id: String, _ document: JSONValue) async throws -> String {
        let (status, body) = try await send(.PUT, "_local/" + Self.escape(String(id.dropFirst("_local/".count))),
                                            body: Array(document.exactJSONText.utf8))
        try check(status, body, "PUT \(id)")
        return body["rev"]?.stringValue ?? ""
    }

    func changes(since: JSONValue, limit: Int, filter: ReplicationFilter, wait: Double?) async throws -> ChangesBatch {
        var query: [(String, String)] = [("style", "all_docs"), ("since", Self.sequenceText(since)), ("limit", String(limit))]
        if let wait { query += [("feed", "longpoll"), ("timeout", String(Int(wait * 1000)))] }
        var method: HTTPMethod = .GET
        var body: [UInt8]?
        switch filter {
        case .none: break
        case .documentIDs(let ids):
            query.append(("filter", "_doc_ids"))
            method = .POST
            body = Array(JSONValue.object([("doc_ids", .array(ids.map { .string($0) }))]).exactJSONText.utf8)
        case .selector(let selector):
            query.append(("filter", "_selector"))
            method = .POST
            body = Array(JSONValue.object([("selector", selector)]).exactJSONText.utf8)
        case .function(let name, let parameters):
            query.append(("filter", name))
            query += parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
        let (status, answer) = try await send(method, "_changes", query: query, body: body, timeout: (wait ?? 0) + 60)
        try check(status, answer, "GET _changes")
        guard case .array(let results)? = answer["results"] else {
            throw ReplicationError.unreachable(endpoint: name, reason: "its _changes answer has no results")
        }
        let rows: [ChangeRow] = results.compactMap { row in
            guard let id = row["id"]?.stringValue, let sequence = row["seq"] else { return nil }
            let revisions: [String] = if case .array(let changes)? = row["changes"] { changes.compactMap { $0["rev"]?.stringValue } } else { [] }
            return ChangeRow(sequence: sequence, id: id, revisions: revisions, deleted: row["deleted"] == .bool(true))
        }
        return ChangesBatch(rows: rows, lastSequence: answer["last_seq"] ?? rows.last?.sequence ?? since)
    }

    func missingRevisions(_ asked: [(id: String, revisions: [String])]) async throws -> [String: MissingRevisions] {
        let request = JSONValue.object(asked.map { ($0.id, .array($0.revisions.map { .string($0) })) })
        let (status, body) = try await send(.POST, "_revs_diff", body: Array(request.exactJSONText.utf8))
        try check(status, body, "POST _revs_diff")
        guard case .object(let members) = body else { return [:] }
        var answer: [String: MissingRevisions] = [:]
        for (id, entry) in members {
            func strings(_ key: String) -> [String] {
                if case .array(let values)? = entry[key] { values.compactMap(\.stringValue) } else { [] }
            }
            answer[id] = MissingRevisions(missing: strings("missing"), possibleAncestors: strings("possible_ancestors"))
        }
        return answer
    }

    func documents(_ wanted: [WantedRevisions], byteLimit: Int) async throws -> (documents: [ReplicatedDocument], taken: Int) {
        var entries: [JSONValue] = []
        for entry in wanted {
            for revision in entry.revisions {
                var members: [(key: String, value: JSONValue)] = [("id", .string(entry.id)), ("rev", .string(revision))]
                if !entry.attachmentsSince.isEmpty { members.append(("atts_since", .array(entry.attachmentsSince.map { .string($0) }))) }
                entries.append(.object(members))
            }
        }
        let request = JSONValue.object([("docs", .array(entries))])
        let (status, body) = try await send(.POST, "_bulk_get", query: [("revs", "true"), ("attachments", "true"), ("latest", "true")],
                                            body: Array(request.exactJSONText.utf8))
        try check(status, body, "POST _bulk_get")
        guard case .array(let results)? = body["results"] else {
            throw ReplicationError.unreachable(endpoint: name, reason: "its _bulk_get answer has no results")
        }
        var documents: [ReplicatedDocument] = []
        var seen = Set<String>()
        for result in results {
            guard case .array(let docs)? = result["docs"] else { continue }
            for doc in docs {
                guard let document = doc["ok"], let id = document["_id"]?.stringValue,
                      let revision = document["_rev"]?.stringValue, seen.insert(id + "\u{0}" + revision).inserted else { continue }
                documents.append(ReplicatedDocument(id: id, revision: revision, json: Array(document.exactJSONText.utf8)))
            }
        }
        return (documents, wanted.count)
    }

    func write(_ documents: [ReplicatedDocument]) async throws -> [WriteFailure] {
        var body: [UInt8] = Array("{\"new_edits\":false,\"docs\":[".utf8)
        for (index, document) in documents.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += document.json
        }
        body += Array("]}".utf8)
        let (status, answer) = try await send(.POST, "_bulk_docs", body: body)
        try check(status, answer, "POST _bulk_docs")
        guard case .array(let errors) = answer else { return [] }
        return errors.compactMap { entry in
            guard let error = entry["error"]?.stringValue else { return nil }
            return WriteFailure(id: entry["id"]?.stringValue ?? "", revision: entry["rev"]?.stringValue ?? "",
                                error: error, reason: entry["reason"]?.stringValue ?? "")
        }
    }

    // MARK: HTTP

    /// Sends a request to `path` under the database's URL (nil: the
    /// server's root), trying again on transient failures; returns the
    /// status and the JSON answer (`null` when it is not JSON).
    private func send(_ method: HTTPMethod, _ path: String?, query: [(String, String)] = [], body: [UInt8]? = nil,
                      timeout: Double = 120) async throws -> (Int, JSONValue) {
        var url = path.map { database.url.absoluteString + $0 } ?? database.serverURL.absoluteString
        if !query.isEmpty { url += "?" + query.map { "\($0.0)=\(Self.escape($0.1))" }.joined(separator: "&") }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Settee-Replicator")
        if let username = database.username {
            let token = Data("\(username):\(database.password ?? "")".utf8).base64EncodedString()
            request.headers.add(name: "Authorization", value: "Basic \(token)")
        }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        var attempt = 0
        while true {
            try Task.checkCancellation()
            do {
                let response = try await client.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
                let bytes = try await response.body.collect(upTo: Self.largestResponse)
                let status = Int(response.status.code)
                if status >= 500, attempt < retries {
                    attempt += 1
                    try await Task.sleep(for: .milliseconds(250 << min(attempt, 6)))
                    continue
                }
                let json = (try? JSONParser.parse(bytes.readableBytesView)) ?? .null
                return (status, json)
            } catch let error as CancellationError {
                throw error
            } catch {
                if Task.isCancelled { throw CancellationError() }
                guard attempt < retries else {
                    throw ReplicationError.unreachable(endpoint: name, reason: "\(error)")
                }
                attempt += 1
                try await Task.sleep(for: .milliseconds(250 << min(attempt, 6)))
            }
        }
    }

    /// Throws what the server answered unless it is a success.
    private func check(_ status: Int, _ body: JSONValue, _ what: String) throws {
        guard !(200..<300).contains(status) else { return }
        throw ReplicationError.refused(endpoint: "\(name) (\(what))", status: status,
                                       error: body["error"]?.stringValue ?? "http_\(status)",
                                       reason: body["reason"]?.stringValue ?? "")
    }

    /// A sequence as a query parameter: a string as is, a number as its digits.
    static func sequenceText(_ sequence: JSONValue) -> String {
        switch sequence {
        case .string(let text): return text
        case .null: return "0"
        default: return sequence.exactJSONText
        }
    }

    /// Percent-encodes a path segment or query value.
    static func escape(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
