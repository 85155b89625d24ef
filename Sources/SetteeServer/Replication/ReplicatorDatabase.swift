import Foundation
import Logging
import Settee
import SetteeReplication
import Synchronization

/// The `_replicator` database as CouchDB's replication scheduler reads it:
/// each document a replication, started when written, restarted when
/// changed, stopped when deleted. A one-shot replication that completes
/// (or a document that cannot be run) is recorded in its document —
/// `_replication_state` `completed` with `_replication_stats`, or `failed`
/// with `_replication_state_reason` — as CouchDB records it;
/// `/_scheduler/docs` shows every document's state.
///
/// A document whose `owner` is not a server administrator names its
/// databases by URL: by name, a database would be opened past HTTP's
/// authorization.
final class ReplicatorDatabase: Sendable {
    /// A replication document's state, as `/_scheduler/docs` lists it.
    struct Entry: Sendable {
        var documentID: String
        var replicationID: String?
        var source: String?
        var target: String?
        var state: String
        var error: String?
        var status = ReplicationStatus()
        var started = Date()
        var updated = Date()
        var task: Task<Void, Never>?
    }

    static let name = "_replicator"
    private let entries = Mutex<[String: Entry]>([:])
    private let databases: DatabaseFolder
    private let serverUUID: String
    private let isAdministrator: @Sendable (String?) -> Bool
    private let logger: Logger

    /// - Parameter isAdministrator: Whether a document's owner may name databases without a URL.
    init(databases: DatabaseFolder, serverUUID: String, logger: Logger, isAdministrator: @escaping @Sendable (String?) -> Bool) {
        self.databases = databases
        self.serverUUID = serverUUID
        self.logger = logger
        self.isAdministrator = isAdministrator
    }

    /// The documents' states, by document id.
    var all: [Entry] { entries.withLock { Array($0.values) }.sorted { $0.documentID < $1.documentID } }

    /// Follows `_replicator`'s changes until the calling task is cancelled
    /// (waiting for the database while there is none), then stops every
    /// replication it started.
    func follow() async {
        var since: UInt64 = 0
        defer { stopAll() }
        while !Task.isCancelled {
            do {
                guard databases.exists(Self.name) else {
                    since = 0
                    stopAll()
                    try await Task.sleep(for: .seconds(1))
                    continue
                }
                let database = try databases.database(Self.name)
                if try await database.info().updateSequence < since { since = 0 }   // deleted and made again
                let changes = try await database.changes(since: since, limit: 100)
                if changes.isEmpty {
                    // Wakes for a write, or after a second to notice a deleted database.
                    let after = since
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { _ = await database.waitForCommit(after: after) }
                        group.addTask { try? await Task.sleep(for: .seconds(1)) }
                        await group.next()
                        group.cancelAll()
                    }
                    continue
                }
                for change in changes {
                    await handle(change, in: database)
                    since = change.sequence
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("_replicator: \(error)")
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    private func handle(_ change: Change, in database: Database) async {
        let id = change.id
        guard !id.hasPrefix("_design/") else { return }
        guard !change.isDeleted, let document = try? await database.document(id), let body = try? document.value else {
            stop(id, removing: true)
            return
        }
        if let state = body["_replication_state"]?.stringValue, state == "completed" || state == "failed" {
            // Recorded by a run that ended: nothing to start.
            entries.withLock { entries in
                if entries[id]?.task == nil || entries[id]?.state == state {
                    entries[id] = Entry(documentID: id, replicationID: entries[id]?.replicationID, source: entries[id]?.source,
                                        target: entries[id]?.target, state: state,
                                        error: body["_replication_state_reason"]?.stringValue, status: entries[id]?.status ?? ReplicationStatus())
                }
            }
            return
        }
        let request: ReplicationRequest
        do {
            request = try ReplicationRequest(body, databases: databases, serverUUID: serverUUID, logger: logger,
                                             localNames: isAdministrator(body["owner"]?.stringValue))
        } catch {
            stop(id, removing: true)
            let reason = CouchError(from: error).reason
            entries.withLock { $0[id] = Entry(documentID: id, state: "failed", error: reason) }
            await record(id, in: database, [("_replication_state", "failed"), ("_replication_state_reason", .string(reason))])
            return
        }
        if let running = entries.withLock({ $0[id] }), running.replicationID == request.id, running.task != nil { return }
        stop(id, removing: false)
        start(id, request, in: database)
    }

    private func start(_ id: String, _ request: ReplicationRequest, in database: Database) {
        let replicator = request.replicator
        let entry = Entry(documentID: id, replicationID: request.id, source: replicator.source.description,
                          target: replicator.target.description, state: "running")
        entries.withLock { $0[id] = entry }
        let logger = logger
        let task = Task { [weak self] in
            do {
                let status = try await replicator.run { [weak self] status in self?.update(id, status) }
                guard status.state == .completed, let self else { return }
                self.finish(id, state: "completed", error: nil)
                await self.record(id, in: database, [
                    ("_replication_state", "completed"),
                    ("_replication_stats", [
                        "revisions_checked": .number(Double(status.missingChecked)),
                        "missing_revisions_found": .number(Double(status.missingFound)),
                        "docs_read": .number(Double(status.docsRead)), "docs_written": .number(Double(status.docsWritten)),
                        "doc_write_failures": .number(Double(status.docWriteFailures)),
                        "checkpointed_source_seq": status.checkpointedSequence ?? nil,
                    ]),
                ])
            } catch {
                guard !Task.isCancelled, let self else { return }
                logger.warning("_replicator/\(id): \(error)")
                let reason = (error as? ReplicationError)?.description ?? CouchError(from: error).reason
                self.finish(id, state: "failed", error: reason)
                await self.record(id, in: database, [("_replication_state", "failed"), ("_replication_state_reason", .string(reason))])
            }
        }
        entries.withLock { entries in
            if entries[id]?.replicationID == request.id, entries[id]?.state == "running" { entries[id]?.task = task } else { task.cancel() }
        }
    }

    private func update(_ id: String, _ status: ReplicationStatus) {
        entries.withLock { entries in
            entries[id]?.status = status
            entries[id]?.updated = Date()
            if case .retrying(let reason) = status.state {
                entries[id]?.state = "crashing"
                entries[id]?.error = reason
            } else if entries[id]?.state == "crashing" {
                entries[id]?.state = "running"
                entries[id]?.error = nil
            }
        }
    }

    private func finish(_ id: String, state: String, error: String?) {
        entries.withLock { entries in
            entries[id]?.state = state
            entries[id]?.error = error
            entries[id]?.task = nil
            entries[id]?.updated = Date()
        }
    }

    /// Writes `fields` (and `_replication_state_time`) into document `id`, as CouchDB's scheduler does.
    private func record(_ id: String, in database: Database, _ fields: [(key: String, value: JSONValue)]) async {
        for _ in 0..<3 {
            guard let document = try? await database.document(id), !document.isDeleted,
                  case .object(var members) = try? document.value else { return }
            members.removeAll { $0.key.hasPrefix("_replication_") }
            members += fields
            members.append(("_replication_state_time", .string(ISO8601DateFormatter().string(from: Date()))))
            do {
                _ = try await database.put(JSONValue.object(members).exactJSONText)
                return
            } catch {
                continue   // the document changed meanwhile: read it again
            }
        }
    }

    private func stop(_ id: String, removing: Bool) {
        let task: Task<Void, Never>? = entries.withLock { entries in
            let task = entries[id]?.task
            if removing { entries[id] = nil } else { entries[id]?.task = nil }
            return task
        }
        task?.cancel()
    }

    private func stopAll() {
        let tasks = entries.withLock { entries in
            defer { entries = [:] }
            return entries.values.compactMap(\.task)
        }
        for task in tasks { task.cancel() }
    }
}
