import Foundation
import HTTPTypes
import Hummingbird
import Settee
import SetteeReplication

/// `POST /_replicate` and `GET /_scheduler/jobs`: replications the server
/// runs with Settee's ``Replicator``, for administrators.
///
/// A database named without a URL is this server's own, opened in place
/// (the write rules and `validate_doc_update` of its store still apply); a
/// URL — with credentials in it, in `auth.basic` or in an `Authorization`
/// header — is reached over HTTP.
extension CouchResponder {
    func replicateEndpoint(_ request: inout CouchRequest) async throws -> Response {
        try allow(request, "POST")
        try requireAdministrator(request)
        let body = try await request.jsonObjectBody()
        if body["cancel"] == .bool(true) {
            let id = try body["replication_id"]?.stringValue ?? replicator(for: body).1
            guard replications.cancel(id) || replications.cancel(id.split(separator: "+").first.map(String.init) ?? id) else {
                throw CouchError(.notFound, "not_found", "Replication \(id) is not running")
            }
            return CouchResponse.json(["ok": true, "_local_id": .string(id)])
        }
        let (replicator, id) = try replicator(for: body)
        if replicator.options.continuous {
            _ = replications.start(replicator, id: id, user: request.user.name)
            return CouchResponse.json(.accepted, ["ok": true, "_local_id": .string(id)])
        }
        let status: ReplicationStatus
        do {
            status = try await replications.runOnce(replicator, id: id, user: request.user.name)
        } catch let error as ReplicationError {
            throw Self.couchError(error)
        }
        var answer: [(key: String, value: JSONValue)] = [("ok", true)]
        if status.missingChecked == 0 { answer.append(("no_changes", true)) }
        answer += [("replication_id", .string(id)), ("source_last_seq", status.checkpointedSequence ?? .null),
                   ("replication_id_version", 4),
                   ("history", [Self.statistics(status)])]
        return CouchResponse.json(.object(answer))
    }

    /// `GET /_scheduler/jobs`, `GET /_scheduler/docs`.
    func schedulerEndpoint(_ request: inout CouchRequest) async throws -> Response {
        try allow(request, "GET,HEAD")
        try requireAdministrator(request)
        let segments = request.segments
        guard segments.count >= 2 else { throw CouchError.missing }
        switch segments[1] {
        case "jobs":
            let jobs: [JSONValue] = replications.all.map { job in
                [
                    "database": nil, "id": .string(job.id), "pid": nil, "source": .string(job.source), "target": .string(job.target),
                    "user": job.user.map(JSONValue.string) ?? nil, "doc_id": nil, "node": "settee@localhost",
                    "start_time": .string(ISO8601DateFormatter().string(from: job.started)),
                    "info": Self.statistics(job.status),
                    "history": [["timestamp": .string(ISO8601DateFormatter().string(from: job.started)), "type": "started"]],
                ]
            }
            return CouchResponse.json(["total_rows": .number(Double(jobs.count)), "offset": 0, "jobs": .array(jobs)])
        case "docs":
            return CouchResponse.json(["total_rows": 0, "offset": 0, "docs": []])
        default:
            throw CouchError.missing
        }
    }

    /// The statistics of a replication, as CouchDB's history entries and job infos name them.
    static func statistics(_ status: ReplicationStatus) -> JSONValue {
        [
            "missing_checked": .number(Double(status.missingChecked)), "missing_found": .number(Double(status.missingFound)),
            "docs_read": .number(Double(status.docsRead)), "docs_written": .number(Double(status.docsWritten)),
            "doc_write_failures": .number(Double(status.docWriteFailures)),
            "source_seq": status.sequence ?? nil, "checkpointed_source_seq": status.checkpointedSequence ?? nil,
        ]
    }

    /// The replication a `_replicate` body asks for, and its id.
    private func replicator(for body: JSONValue) throws -> (Replicator, String) {
        var options = ReplicationOptions()
        options.serverUUID = replications.serverUUID
        func flag(_ name: String) throws -> Bool {
            switch body[name] {
            case nil, .null?: return false
            case .bool(let value)?: return value
            default: throw CouchError.badRequest("parameter `\(name)` must be a boolean")
            }
        }
        options.continuous = try flag("continuous")
        options.createTarget = try flag("create_target")
        if body["use_checkpoints"] == .bool(false) { options.useCheckpoints = false }
        if case .number(let size, _)? = body["worker_batch_size"], size >= 1, size <= 10_000 { options.batchSize = Int(size) }
        if case .number(let milliseconds, _)? = body["checkpoint_interval"], milliseconds >= 0, milliseconds < 1e9 {
            options.checkpointInterval = milliseconds / 1000
        }
        if let since = body["since_seq"], since != .null { options.sinceSequence = since }
        var filters = 0
        switch body["doc_ids"] {
        case nil, .null?: break
        case .array(let ids)?:
            let strings = ids.compactMap(\.stringValue)
            guard strings.count == ids.count else { throw CouchError.badRequest("parameter `doc_ids` must be an array of strings") }
            options.filter = .documentIDs(strings)
            filters += 1
        default: throw CouchError.badRequest("parameter `doc_ids` must be an array")
        }
        switch body["selector"] {
        case nil, .null?: break
        case .object?:
            options.filter = .selector(body["selector"]!)
            filters += 1
        default: throw CouchError.badRequest("parameter `selector` must be a JSON object")
        }
        switch body["filter"] {
        case nil, .null?: break
        case .string(let name)?:
            var parameters: [String: String] = [:]
            if case .object(let members)? = body["query_params"] {
                for (key, value) in members { parameters[key] = value.stringValue ?? value.exactJSONText }
            }
            options.filter = .function(name, queryParameters: parameters)
            filters += 1
        default: throw CouchError.badRequest("parameter `filter` must be a string")
        }
        guard filters <= 1 else { throw CouchError.badRequest("`selector`, `filter` and `doc_ids` are mutually exclusive") }
        let source = try endpoint(body["source"], "source", creating: false)
        let target = try endpoint(body["target"], "target", creating: options.createTarget)
        let replicator = Replicator(source: source, target: target, options: options, logger: logger)
        if case .function = options.filter {
            // The id hashes the filter's source, which only the running replication reads.
            return (replicator, try Replicator.replicationID(source: source, target: target, options: options, filterSource: ""))
        }
        do {
            return (replicator, try Replicator.replicationID(source: source, target: target, options: options))
        } catch let error as ReplicationError {
            throw Self.couchError(error)
        }
    }

    /// An endpoint of a `_replicate` body: a database of this server by
    /// name, or a URL (a string, or `{"url", "headers", "auth"}`).
    private func endpoint(_ value: JSONValue?, _ role: String, creating: Bool) throws -> ReplicationEndpoint {
        var url: String?
        var username: String?, password: String?
        switch value {
        case .string(let text)?:
            url = text
        case .object?:
            url = value?["url"]?.stringValue
            if let basic = value?["auth"]?["basic"] {
                username = basic["username"]?.stringValue
                password = basic["password"]?.stringValue
            } else if case .object(let headers)? = value?["headers"],
                      let authorization = headers.first(where: { $0.key.lowercased() == "authorization" })?.value.stringValue,
                      authorization.lowercased().hasPrefix("basic "),
                      let decoded = Data(base64Encoded: String(authorization.dropFirst(6))).map({ String(decoding: $0, as: UTF8.self) }),
                      let colon = decoded.firstIndex(of: ":") {
                username = String(decoded[..<colon])
                password = String(decoded[decoded.index(after: colon)...])
            }
        default:
            break
        }
        guard let url, !url.isEmpty else { throw CouchError.badRequest("Missing or invalid `\(role)` database") }
        let lowered = url.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            do {
                return .remote(try RemoteDatabase(url, username: username, password: password))
            } catch let error as ReplicationError {
                throw Self.couchError(error)
            }
        }
        let name = url.removingPercentEncoding ?? url
        guard DatabaseFolder.isValidName(name) || DatabaseFolder.systemDatabases.contains(name) else { throw DatabaseFolder.illegalName(name) }
        if databases.exists(name) { return .local(try databases.database(name)) }
        guard creating else { throw CouchError(.notFound, "db_not_found", "could not open \(name)") }
        return .local(try databases.create(name))
    }

    /// CouchDB's status and words for a replication that could not run.
    static func couchError(_ error: ReplicationError) -> CouchError {
        switch error {
        case .invalidEndpoint(let reason), .invalidOptions(let reason): return CouchError.badRequest(reason)
        case .sourceMissing(let name), .targetMissing(let name): return CouchError(.notFound, "db_not_found", "could not open \(name)")
        case .refused, .unreachable: return CouchError(.internalServerError, "replication_failed", error.description)
        }
    }
}
