public import AsyncHTTPClient
import Foundation
public import Logging
public import Settee

/// CouchDB's replication protocol, run by Settee: carries every revision a
/// source has and a target lacks — conflicts, deletions, attachments,
/// design documents, never `_local` ones — from one database to another,
/// each a local `Database` or a database of a CouchDB server.
///
/// ```swift
/// let replicator = Replicator(source: .local(db), target: .remote(try RemoteDatabase("http://adm:pass@couch:5984/books")))
/// let status = try await replicator.run()
/// print(status.docsWritten)
/// ```
///
/// A replication records checkpoints in `_local/<replication id>` at both
/// ends as CouchDB does, with CouchDB's replication id: a replication
/// resumes where the last one between the same databases stopped, whether
/// Settee or CouchDB ran it. ``ReplicationOptions/continuous`` keeps it
/// running until its task is cancelled, through lost connections and server
/// restarts (``ReplicationStatus/State-swift.enum/retrying(_:)``).
/// Conflicts arrive as conflicts: read them with `revisions(of:)`.
public struct Replicator: Sendable {
    /// Where revisions come from.
    public let source: ReplicationEndpoint
    /// Where they go.
    public let target: ReplicationEndpoint
    public let options: ReplicationOptions
    let logger: Logger
    let client: HTTPClient?

    /// A replication from `source` to `target`.
    /// - Parameters:
    ///   - source: Where revisions come from.
    ///   - target: Where they go.
    ///   - options: How it runs (continuous, a filter, checkpoints…).
    ///   - logger: Where it logs what it does (nothing by default).
    ///   - client: The HTTP client remote endpoints are reached with; nil for async-http-client's shared one,
    ///     started only when a remote endpoint needs it.
    public init(source: ReplicationEndpoint, target: ReplicationEndpoint, options: ReplicationOptions = ReplicationOptions(),
                logger: Logger = Database.quietLogger, client: HTTPClient? = nil) {
        self.source = source
        self.target = target
        self.options = options
        self.logger = logger
        self.client = client
    }

    /// Runs the replication: a one-shot one until every change is carried,
    /// a continuous one until the calling task is cancelled.
    /// - Parameter progress: Called with the status after each batch and
    ///   each change of state.
    /// - Returns: The final status (`completed`, or `stopped` when cancelled).
    /// - Throws: ``ReplicationError`` when an endpoint refuses the
    ///   replication (a missing database, wrong credentials), or a one-shot
    ///   replication cannot reach one.
    @discardableResult
    public func run(progress: @escaping @Sendable (ReplicationStatus) -> Void = { _ in }) async throws -> ReplicationStatus {
        var run = ReplicationRun(source: peer(source), target: peer(target), options: options, logger: logger, report: progress)
        try await run.run()
        return run.status
    }

    /// The replication's statuses as it runs (started when iterated,
    /// cancelled when the iteration stops); the sequence ends after
    /// `completed`, or throws what stopped it.
    public func statuses() -> AsyncThrowingStream<ReplicationStatus, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await run { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Replicates both ways between `first` and `second` (PouchDB's `sync`):
    /// two replications run side by side until both complete (or, when
    /// continuous, until the calling task is cancelled).
    /// - Returns: The status of `first` → `second`, then of `second` → `first`.
    public static func sync(_ first: ReplicationEndpoint, _ second: ReplicationEndpoint,
                            options: ReplicationOptions = ReplicationOptions(),
                            logger: Logger = Database.quietLogger) async throws -> (ReplicationStatus, ReplicationStatus) {
        async let push = Replicator(source: first, target: second, options: options, logger: logger).run()
        async let pull = Replicator(source: second, target: first, options: options, logger: logger).run()
        return try await (push, pull)
    }

    /// The replication id CouchDB 3.x gives a replication of `source` to
    /// `target` run by the server `options.serverUUID` (`"settee"` when nil):
    /// its checkpoints are `_local/<id before any +>`.
    /// - Parameters:
    ///   - source: Where revisions come from.
    ///   - target: Where they go.
    ///   - options: The options that enter the id: continuous, create target, the filter, the server UUID.
    ///   - filterSource: The filter function's source, for a `.function` filter.
    public static func replicationID(source: ReplicationEndpoint, target: ReplicationEndpoint, options: ReplicationOptions,
                                     filterSource: String? = nil) throws -> String {
        ReplicationID(serverUUID: options.serverUUID ?? "settee", source: ReplicationID.term(of: source),
                      target: ReplicationID.term(of: target),
                      filter: try ReplicationID.filterTerms(options.filter, functionSource: filterSource), options: options).full
    }

    private func peer(_ endpoint: ReplicationEndpoint) -> any ReplicationPeer {
        switch endpoint {
        case .local(let database): return LocalPeer(database: database)
        case .remote(let database): return RemotePeer(database: database, client: client ?? .shared, retries: options.retries)
        }
    }
}

/// One replication as it runs: its endpoints, where it stands, its statistics.
struct ReplicationRun {
    let source: any ReplicationPeer
    let target: any ReplicationPeer
    let options: ReplicationOptions
    let logger: Logger
    let report: @Sendable (ReplicationStatus) -> Void
    var status = ReplicationStatus()
    /// Revisions read and written as one group (see `carry`): a whole
    /// batch (one write transaction) unless documents are large.
    lazy var groupSize = options.batchSize

    init(source: any ReplicationPeer, target: any ReplicationPeer, options: ReplicationOptions, logger: Logger,
         report: @escaping @Sendable (ReplicationStatus) -> Void) {
        self.source = source
        self.target = target
        self.options = options
        self.logger = logger
        self.report = report
    }

    mutating func run() async throws {
        guard options.batchSize > 0 else { throw ReplicationError.invalidOptions("batchSize must be positive") }
        var delay = options.retryDelay
        while true {
            do {
                try await session()
                return
            } catch let error as ReplicationError where options.continuous && error.isTransient {
                logger.warning("Replication \(source.name) → \(target.name): \(error); trying again in \(delay) s")
                set(.retrying(error.description))
                do { try await Task.sleep(for: .seconds(delay)) } catch { set(.stopped); return }
                delay = min(delay * 2, options.retryLimit)
            } catch is CancellationError {
                set(.stopped)
                return
            }
        }
    }

    private mutating func set(_ state: ReplicationStatus.State) {
        status.state = state
        report(status)
    }

    /// One session: from the checkpoint to the end of the changes (one-shot)
    /// or until cancelled (continuous).
    private mutating func session() async throws {
        set(.starting)
        guard try await source.info() != nil else { throw ReplicationError.sourceMissing(source.name) }
        if try await target.info() == nil {
            guard options.createTarget else { throw ReplicationError.targetMissing(target.name) }
            try await target.create()
        }
        var functionSource: String?
        if case .function(let name, _) = options.filter {
            guard name.contains("/") else { throw ReplicationError.invalidOptions("Invalid filter. Must match `ddocname/filtername`.") }
            guard let code = try await source.filterSource(name) else {
                throw ReplicationError.invalidOptions("Couldn't open the filter function \(name) of \(source.name)")
            }
            functionSource = code
        }
        var uuid = options.serverUUID
        if uuid == nil { uuid = try await source.serverUUID() }
        if uuid == nil { uuid = try await target.serverUUID() }
        let id = ReplicationID(serverUUID: uuid ?? "settee", source: source.replicationIDTerm(), target: target.replicationIDTerm(),
                               filter: try ReplicationID.filterTerms(options.filter, functionSource: functionSource), options: options)
        status.replicationID = id.full

        var sourceLog = options.useCheckpoints ? try await source.localDocument(id.checkpointID) : nil
        var targetLog = options.useCheckpoints ? try await target.localDocument(id.checkpointID) : nil
        var (start, history) = Checkpoint.start(source: sourceLog, target: targetLog)
        status.checkpoint = sourceLog
        if let since = options.sinceSequence { start = since }
        let session = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let startTime = Date()
        var cursor = start, committed = start
        var lastCheckpoint = ContinuousClock.now
        var caughtUp = false
        status.checkpointedSequence = start
        logger.info("Replication \(id.full): \(source.name) → \(target.name) from \(start.exactJSONText)")
        set(.running)

        let (source, target, options) = (self.source, self.target, self.options)
        func checkpoint(_ statistics: ReplicationStatus) async throws {
            guard options.useCheckpoints, cursor != committed else { return }
            let isDocumentIDs: Bool = if case .documentIDs = options.filter { true } else { false }
            func write(_ end: any ReplicationPeer, over previous: JSONValue?) async throws -> JSONValue {
                let log = Checkpoint.log(id: id.checkpointID, revision: previous?["_rev"]?.stringValue, session: session,
                                         startSequence: start, sequence: cursor, startTime: startTime,
                                         statistics: statistics, history: history, documentIDs: isDocumentIDs)
                let revision = try await end.putLocalDocument(id.checkpointID, log)
                guard case .object(var members) = log else { return log }
                members.removeAll { $0.key == "_rev" }
                members.insert(("_rev", .string(revision)), at: 1)
                return .object(members)
            }
            sourceLog = try await write(source, over: sourceLog)
            targetLog = try await write(target, over: targetLog)
            committed = cursor
            lastCheckpoint = .now
        }

        while true {
            try Task.checkCancellation()
            let wait: Double? = options.continuous && caughtUp ? 10 : nil
            let batch = try await source.changes(since: cursor, limit: options.batchSize, filter: options.filter, wait: wait)
            if batch.rows.isEmpty, batch.lastSequence != .null, batch.lastSequence != cursor, wait == nil {
                // A batch the filter emptied: go on from where it ended.
                cursor = batch.lastSequence
                status.sequence = cursor
                continue
            }
            if batch.rows.isEmpty {
                if batch.lastSequence != .null { cursor = batch.lastSequence }
                status.sequence = cursor
                try await checkpoint(status)
                status.checkpointedSequence = committed
                status.checkpoint = sourceLog
                if !options.continuous {
                    set(.completed)
                    return
                }
                if !caughtUp || status.state != .idle { set(.idle) }
                caughtUp = true
                continue
            }
            if status.state != .running { set(.running) }
            caughtUp = batch.rows.count < options.batchSize
            try await carry(batch.rows)
            cursor = batch.lastSequence
            status.sequence = cursor
            if ContinuousClock.now - lastCheckpoint > .seconds(options.checkpointInterval) {
                try await checkpoint(status)
                status.checkpointedSequence = committed
                status.checkpoint = sourceLog
            }
            report(status)
        }
    }

    /// Carries the revisions of `rows` the target lacks: read from the source
    /// in groups, each group written while the next is read. A group is
    /// a batch at most — one write transaction — and fewer once a group's
    /// documents came to more than ``groupBytes`` (documents with large
    /// attachments travel a few at a time), so memory holds about two groups.
    private mutating func carry(_ rows: [ChangeRow]) async throws {
        status.missingChecked += rows.reduce(0) { $0 + $1.revisions.count }
        let missing = try await target.missingRevisions(rows.map { ($0.id, $0.revisions) })
        guard !missing.isEmpty else { return }
        var wanted: [WantedRevisions] = []
        for row in rows {
            guard let entry = missing[row.id], !entry.missing.isEmpty else { continue }
            wanted.append(WantedRevisions(id: row.id, revisions: entry.missing, attachmentsSince: entry.possibleAncestors))
            status.missingFound += entry.missing.count
        }
        let target = self.target
        var writing: Task<[WriteFailure], any Error>?
        var written = 0
        var next = wanted[...]
        while !next.isEmpty {
            let group = next.prefix(groupSize)
            let (documents, taken) = try await source.documents(Array(group), byteLimit: Self.groupBytes)
            next = next.dropFirst(max(1, taken))
            status.docsRead += documents.count
            let bytes = documents.reduce(0) { $0 + $1.json.count }
            groupSize = bytes > Self.groupBytes ? max(1, groupSize / 2) : min(options.batchSize, groupSize * 2)
            if let writing { try await record(writing.value, of: written) }
            written = documents.count
            writing = documents.isEmpty ? nil : Task { try await target.write(documents) }
        }
        if let writing { try await record(writing.value, of: written) }
    }

    /// Counts a written group and its refusals.
    private mutating func record(_ failures: [WriteFailure], of count: Int) {
        status.docsWritten += count - failures.count
        status.docWriteFailures += failures.count
        for failure in failures {
            logger.warning("Replication to \(target.name): \(failure.id) \(failure.revision) refused: \(failure.error): \(failure.reason)")
        }
        status.failures = Array((status.failures + failures).suffix(100))
    }

    /// The size past which a group's documents make the next group smaller.
    static let groupBytes = 32 << 20
}
