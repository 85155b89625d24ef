import Foundation
import Logging
import Settee
import SetteeReplication
import Synchronization

/// The replications a server runs (`POST /_replicate`), as
/// `/_scheduler/jobs` lists them, and the server's UUID that enters their
/// replication ids (kept in `DIR/_settee/uuid`, shown by `GET /`).
final class ServerReplications: Sendable {
    /// One replication under way.
    struct Job: Sendable {
        var id: String
        var source: String
        var target: String
        var user: String?
        var continuous: Bool
        var started: Date
        var status: ReplicationStatus
        var task: Task<Void, Never>?
    }

    let serverUUID: String
    /// The replications of the `_replicator` database.
    let documents: ReplicatorDatabase
    private let jobs = Mutex<[String: Job]>([:])
    private let logger: Logger

    /// Reads the server's UUID from `DIR/_settee/uuid`, making one when there is none.
    init(dataDirectory: URL, databases: DatabaseFolder, credentials: ServerCredentials, logger: Logger) throws {
        let file = dataDirectory.appendingPathComponent("_settee", isDirectory: true).appendingPathComponent("uuid")
        if let stored = try? String(contentsOf: file, encoding: .utf8), stored.count == 32 {
            serverUUID = stored
        } else {
            serverUUID = CouchAPI.newUUID()
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(serverUUID.utf8).write(to: file, options: .atomic)
        }
        self.logger = logger
        documents = ReplicatorDatabase(databases: databases, serverUUID: serverUUID, logger: logger) { owner in
            !credentials.hasAdministrators || owner.map { credentials.administrator($0) != nil } ?? false
        }
    }

    /// Runs a one-shot replication to its end, listed as a job while it runs.
    func runOnce(_ replicator: Replicator, id: String, user: String?) async throws -> ReplicationStatus {
        add(Job(id: id, source: replicator.source.description, target: replicator.target.description, user: user,
                continuous: false, started: Date(), status: ReplicationStatus()))
        defer { _ = jobs.withLock { $0.removeValue(forKey: id) } }
        return try await replicator.run { [weak self] status in self?.update(id, status) }
    }

    /// Starts a continuous replication unless one with the same id runs; false when one does.
    func start(_ replicator: Replicator, id: String, user: String?) -> Bool {
        let job = Job(id: id, source: replicator.source.description, target: replicator.target.description, user: user,
                      continuous: true, started: Date(), status: ReplicationStatus())
        let added: Bool = jobs.withLock { jobs in
            guard jobs[id] == nil else { return false }
            jobs[id] = job
            return true
        }
        guard added else { return false }
        let logger = logger
        let task = Task { [weak self] in
            do {
                try await replicator.run { [weak self] status in self?.update(id, status) }
            } catch {
                logger.warning("replication \(id) stopped: \(error)")
            }
            _ = self?.jobs.withLock { $0.removeValue(forKey: id) }
        }
        jobs.withLock { $0[id]?.task = task }
        return true
    }

    /// Stops replication `id`; false when none runs.
    func cancel(_ id: String) -> Bool {
        guard let job = jobs.withLock({ $0.removeValue(forKey: id) }) else { return false }
        job.task?.cancel()
        return true
    }

    /// Every replication under way, oldest first.
    var all: [Job] { jobs.withLock { Array($0.values) }.sorted { $0.started < $1.started } }

    /// Stops every replication (the server is stopping).
    func stopAll() {
        for job in jobs.withLock({ jobs in defer { jobs = [:] }; return Array(jobs.values) }) { job.task?.cancel() }
    }

    private func add(_ job: Job) { jobs.withLock { $0[job.id] = job } }

    private func update(_ id: String, _ status: ReplicationStatus) {
        jobs.withLock { $0[id]?.status = status }
    }
}
