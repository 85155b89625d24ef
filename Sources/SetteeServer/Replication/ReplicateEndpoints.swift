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
extension CouchAPI {
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
        // CouchDB's answer: the replication log at the source (its counts going on across runs).
        var answer: [(key: String, value: JSONValue)] = [("ok", true)]
        if status.docsRead == 0 && status.missingFound == 0 { answer.append(("no_changes", true)) }
        if case .object(let members)? = status.checkpoint {
            answer += members.filter { !$0.key.hasPrefix("_") }
        } else {
            answer += [("source_last_seq", status.checkpointedSequence ?? .null), ("replication_id_version", 4),
                       ("history", [Self.statistics(status)])]
        }
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
            let entries = replications.documents.all
            if segments.count >= 3 {
                // `/_scheduler/docs/_replicator` and `/_scheduler/docs/_replicator/{docid}`.
                guard segments[2] == ReplicatorDatabase.name, segments.count <= 4 else { throw CouchError.missing }
                if segments.count == 4 {
                    guard let entry = entries.first(where: { $0.documentID == segments[3] }) else { throw CouchError.missing }
                    return CouchResponse.json(Self.schedulerDocument(entry))
                }
            }
            return CouchResponse.json(["total_rows": .number(Double(entries.count)), "offset": 0,
                                       "docs": .array(entries.map(Self.schedulerDocument))])
        default:
            throw CouchError.missing
        }
    }

    /// `GET /_active_tasks`: the replications under way, as CouchDB lists
    /// its replication tasks (their counts, and `through_seq`, the source
    /// sequence the replication has read up to).
    func activeTasksEndpoint(_ request: CouchRequest) throws -> Response {
        try allow(request, "GET,HEAD")
        try requireAdministrator(request)
        let now = Date().timeIntervalSince1970.rounded(.down)
        let tasks: [JSONValue] = replications.all.map { job in
            let status = job.status
            return [
                "node": .string(ServerConfig.nodeName), "pid": nil, "type": "replication", "replication_id": .string(job.id),
                "doc_id": nil, "user": job.user.map(JSONValue.string) ?? nil, "source": .string(job.source), "target": .string(job.target),
                "continuous": .bool(job.continuous), "docs_read": .number(Double(status.docsRead)),
                "docs_written": .number(Double(status.docsWritten)), "doc_write_failures": .number(Double(status.docWriteFailures)),
                "missing_revisions_found": .number(Double(status.missingFound)), "revisions_checked": .number(Double(status.missingChecked)),
                "source_seq": status.sequence ?? nil, "checkpointed_source_seq": status.checkpointedSequence ?? nil,
                "through_seq": status.sequence ?? status.checkpointedSequence ?? nil,
                "started_on": .number(job.started.timeIntervalSince1970.rounded(.down)), "updated_on": .number(now),
            ]
        }
        return CouchResponse.json(.array(tasks))
    }

    /// A `_replicator` document's state, as `/_scheduler/docs` shows it.
    static func schedulerDocument(_ entry: ReplicatorDatabase.Entry) -> JSONValue {
        let time = ISO8601DateFormatter()
        var info = statistics(entry.status)
        if let error = entry.error { info = ["error": .string(error)] }
        return [
            "database": .string(ReplicatorDatabase.name), "doc_id": .string(entry.documentID),
            "id": entry.replicationID.map(JSONValue.string) ?? nil, "node": "settee@localhost",
            "source": entry.source.map(JSONValue.string) ?? nil, "target": entry.target.map(JSONValue.string) ?? nil,
            "state": .string(entry.state), "info": info, "error_count": entry.error == nil ? 0 : 1,
            "start_time": .string(time.string(from: entry.started)), "last_updated": .string(time.string(from: entry.updated)),
        ]
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
        let request = try ReplicationRequest(body, databases: databases, serverUUID: replications.serverUUID, logger: logger)
        return (request.replicator, request.id)
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
