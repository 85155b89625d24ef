import Foundation
package import Logging
import Synchronization
package import SetteeCore
@_spi(LMDB) package import SetteeStorage

/// Progress of an index build.
public struct IndexProgress: Sendable {
    /// Changed documents mapped so far.
    public var processed: Int
    /// Changed documents to map in all (an upper bound).
    public var total: Int
    /// Entries (rows and back-index entries) merged so far into new indexes
    /// built from sorted runs: once every document is mapped, a large new
    /// index's rows, written sorted to files as they were mapped, are merged
    /// into it. 0 before that, and for other updates.
    public var merged: Int = 0
    /// Entries to merge in all (0 when no new index is built from sorted runs).
    public var toMerge: Int = 0
    /// Map calls that threw so far in this update (a document failing in two
    /// views counts twice): those documents have no rows in those views.
    public var mapErrors: Int = 0
    /// The first few of them (at most ``MapError/reported``), in the order met.
    public var firstMapErrors: [MapError] = []
}

/// A map function that threw on a document: the view's rows leave the
/// document out, and indexing goes on (CouchDB logs it the same way).
public struct MapError: Sendable, Equatable, CustomStringConvertible {
    /// How many an ``IndexProgress`` lists.
    public static let reported = 3
    /// The design document's id.
    public var designDocument: String
    /// The view's name.
    public var view: String
    /// The document's id.
    public var documentID: String
    /// What was thrown, as the engine describes it.
    public var message: String

    public init(designDocument: String, view: String, documentID: String, message: String) {
        self.designDocument = designDocument
        self.view = view
        self.documentID = documentID
        self.message = message
    }

    public var description: String {
        "\(designDocument.dropFirst("_design/".count))/\(view), document \"\(documentID)\": \(message)"
    }
}

/// Brings view indexes up to date with the documents, incrementally: from the
/// changes after each index's sequence, a changed document's old rows go and
/// its new rows come, in large write transactions that commit the rows, their
/// stored chunk reductions and the sequence checkpoint together.
///
/// A pipeline of three stages on their own threads: one reads the next batch
/// of changed documents (as the JSON map functions see, into one buffer),
/// the JavaScript workers map slices of this batch, each taking the next as
/// it finishes one (all the views being updated from one parse of each
/// document), and one writes the last. Small updates write each batch and
/// keep the chunks up as they go — a JavaScript reduce's chunks excepted,
/// which are computed after the rows commit, on a read snapshot, so that no
/// JavaScript runs while the writer lock is held (every put of every process
/// waits for it); large ones (a new index, or changes to a
/// sixteenth of its rows and more than 64 documents) gather rows and write
/// them in key order: appended where they follow the index's last key,
/// merged with the index's rows into its table afresh where they fall all
/// over it (see ``SortedRows/write(to:bytes:in:mayRewrite:changed:)``);
/// then compute the chunks once, from the committed rows — a new index's
/// (without a JavaScript reduce) on a thread of their own while its last
/// rows are written, from the rows before that write merged with them
/// (``StoredReductions/computeChunks(merging:bytes:withRowsOf:_:)``). Rows that go in
/// in order (appended, or in a few long runs) are written an eighth of
/// ``flushBytes`` at a time, as writing them costs what they take however
/// many go together; once a write finds rows scattered, they gather up to
/// ``flushBytes`` (up to half as much again when that lets the last flush
/// take the rest), as each write then costs about a page per row or a pass
/// over the table. A new index whose rows would take more than
/// ``spillFlushes`` flushes is built from sorted runs on disk instead, merged
/// into it once at the end (see ``spill(_:target:index:state:runs:)``): every row is
/// written once, and LMDB's dirty pages stay bounded by one transaction of
/// the merge. The documents and rows held stay bounded by the batch and
/// buffer sizes, whatever the database's size; a flush that falls all over
/// a large existing index dirties most of its pages, which LMDB holds in
/// memory until the commit (writing them out early past 128k pages, 512 MB)
/// and keeps for later writes until the database closes. Batches are read into
/// the buffers of batches already mapped, and rows gather in room reserved
/// for a flush: fresh buffers would be faulted in and zeroed page by page.
///
/// Each update ends with an "indexed" log line (info from 1,024 documents
/// up, debug below): documents, seconds, and the CPU time of each stage
/// (``IndexingCPU``).
///
/// A small update that leaves every index's rows as they were (the edits
/// touched nothing the views read) commits nothing: the new checkpoints
/// are kept in memory (``ViewIndexStore``) and go in with the next write
/// that has rows, or once they trail by more than 1,024 sequences. A
/// restart forgets them and maps those documents again, to the same rows.
package struct ViewIndexer {
    package let store: DocumentStore
    package let indexes: ViewIndexStore
    package let workers: any FunctionWorkers
    package let logger: Logger
    /// Changed documents per batch: what the workers map at a time.
    package var batchSize = 8192
    /// Bulk targets' rows wait in memory until they take this many bytes (or
    /// the run ends: see ``flushesNow(pendingBytes:pendingDocuments:remainingDocuments:flushBytes:)``),
    /// then go in one write transaction, in key order, appended where they
    /// follow the index's last key. An eighth of it while every write of
    /// the run has found its rows in order (see ``SortedRows/Placement/isScattered``).
    package var flushBytes = 24 << 20
    /// A new index whose rows would take more flushes than this is built
    /// from sorted runs on disk, merged once (see ``spill(_:target:index:state:runs:)``).
    package var spillFlushes = 2

    package init(store: DocumentStore, indexes: ViewIndexStore, workers: any FunctionWorkers, logger: Logger,
                 batchSize: Int = 8192, flushBytes: Int = 24 << 20, spillFlushes: Int = 2) {
        self.store = store
        self.indexes = indexes
        self.workers = workers
        self.logger = logger
        self.batchSize = batchSize
        self.flushBytes = flushBytes
        self.spillFlushes = spillFlushes
    }

    /// Bytes of document JSON after which a batch ends early (large documents).
    private static let batchBytes = 32 << 20
    /// Batches and writes this large release the memory map's pages they
    /// touched (see ``LMDBEnvironment/releaseMappedPages()``); small updates
    /// keep them, as the next query wants them.
    private static let releaseThreshold = 1024
    /// An update goes bulk once its changes reach a sixteenth of its index's
    /// rows, or of this many on a smaller index: up to 64 documents are
    /// always kept up batch by batch (and may commit nothing: see ``checkpointOnly(_:before:after:)``).
    private static let bulkRowsFloor = 1024

    /// One index to bring up to date: the views sharing its signature.
    struct Target: Sendable {
        let view: ViewDefinition
        let tables: ViewIndexTables
        /// The reduce function whose partials the chunks keep (nil: counts only).
        let reducer: Reducer?
        /// The index had no rows: no document has old rows to remove.
        let fresh: Bool
        /// So many changes that the chunks are rebuilt once at the end, not kept up per batch.
        let bulk: Bool
        /// The index had a committed state when the update began.
        let existed: Bool
    }

    /// The signatures of the indexes of `views` that an update would write:
    /// behind the database's latest sequence, or without their chunks.
    package func staleSignatures(_ views: [ViewDefinition]) throws -> Set<String> {
        try store.environment.read { transaction in
            let latest = try store.lastSequence(in: transaction)
            return try Set(views.map(\.signature)).filter { signature in
                let state = try indexes.state(signature, in: transaction) ?? ViewIndexState(designDocument: "", view: "")
                return state.sequence < latest || !state.chunksCurrent
            }
        }
    }

    /// Updates the indexes of `views` to the database's latest sequence, and
    /// says whether it started an index that did not exist.
    @discardableResult
    package func update(_ views: [ViewDefinition], progress: (IndexProgress) -> Void = { _ in }) throws -> Bool {
        var seen = Set<String>()
        let unique = views.filter { seen.insert($0.signature).inserted }
        // Read together: an index that catches up with these purges then maps the changes up to `latest`.
        let (latest, purgeSequence) = try store.environment.read { (try store.lastSequence(in: $0), try store.purgeSequence(in: $0)) }
        let cpu = IndexingCPU()
        let (targets, planned, started) = try plan(unique, latest: latest, purgeSequence: purgeSequence, cpu: cpu)
        var states = planned
        guard !targets.isEmpty else { return started }
        let since = states.map(\.sequence).min()!
        var processed = 0
        let total = Int(latest - since)
        if since < latest {
            // Each view with where it starts: a view an edit changed starts anew, the others go on.
            let views = zip(targets, states).map { target, state in
                target.existed ? "\(target.view.path) from \(state.sequence)" : "\(target.view.path) new"
            }
            logger.info("indexing", metadata: ["views": "\(views)", "since": "\(since)", "to": "\(latest)"])
        }
        let startedAt = ContinuousClock.now
        /// The line that ends an update: how long it took, and where the CPU went.
        func logIndexed() {
            let level: Logger.Level = processed >= Self.releaseThreshold ? .info : .debug
            guard since < latest, logger.logLevel <= level else { return }
            var metadata = cpu.metadata
            metadata["views"] = "\(targets.map(\.view.path))"
            metadata["documents"] = "\(processed)"
            metadata["seconds"] = "\(String(format: "%.3f", (ContinuousClock.now - startedAt) / .seconds(1)))"
            logger.log(level: level, "indexed", metadata: metadata)
        }
        // Steady targets whose chunk partials wait for the end of the update.
        let deferred = DeferredChunks()
        let alongside = ComputedChunks()
        if states.contains(where: { $0.purgeSequence < purgeSequence }) {
            try removePurgedRows(targets: targets, states: &states, upTo: purgeSequence, deferred: deferred)
        }
        var mapErrors = 0
        var firstMapErrors: [MapError] = []
        try mapAndWrite(targets: targets, states: &states, since: since, latest: latest, deferred: deferred, alongside: alongside, cpu: cpu) { documents, errors in
            processed += documents
            mapErrors += errors.count
            firstMapErrors += errors.prefix(MapError.reported - firstMapErrors.count)
            progress(IndexProgress(processed: processed, total: total, mapErrors: mapErrors, firstMapErrors: firstMapErrors))
        } merging: { merged, toMerge in
            progress(IndexProgress(processed: processed, total: total, merged: merged, toMerge: toMerge,
                                   mapErrors: mapErrors, firstMapErrors: firstMapErrors))
        }
        try finish(targets: targets, states: &states, latest: latest, deferred: deferred, alongside: alongside, releasesMemory: total >= Self.releaseThreshold, cpu: cpu)
        logIndexed()
        return started
    }

    /// The pipeline of an update: batches of the documents changed after
    /// `since` are read (the next while one maps), mapped on the workers,
    /// and their rows written — a steady target's batch by batch, a bulk
    /// target's gathered in memory and written in key order when enough
    /// have gathered — on a writer thread while the next batch maps.
    /// `mapped` is told how many documents each batch held; `merging`, the
    /// entries merged so far and in all, when new indexes' sorted runs merge.
    private func mapAndWrite(targets: [Target], states: inout [ViewIndexState], since: UInt64, latest: UInt64,
                             deferred: DeferredChunks, alongside: ComputedChunks, cpu: IndexingCPU, mapped: (Int, [MapError]) -> Void,
                             merging: (_ merged: Int, _ toMerge: Int) -> Void) throws {
        let total = Int(latest - since)
        // Targets kept up batch by batch (chunks and all), and bulk targets whose
        // rows gather in `pending` until a flush.
        let steady = targets.indices.filter { !targets[$0].bulk }
        let bulk = targets.indices.filter { targets[$0].bulk }
        let startStates = states
        let startSequences = states.map(\.sequence)
        var pending = MappedBatch()
        // New indexes built from sorted runs (decided at the first flush).
        let spilled = SpilledRuns()
        var spillDecided = false
        // Set by the writer the first time a bulk target's rows go in scattered.
        let scattered = Flag()
        let writer = BackgroundJob<[ViewIndexState]>(label: "settee.index.writer")
        // The next batch of documents is read while this one maps.
        let reader = BackgroundJob<DocumentBatch>(label: "settee.index.reader")
        // The batch being mapped: the next one is queued behind it on the workers.
        let mapStage = MapStage(views: targets.map(\.view), workers: workers, cpu: cpu)
        var mapping: MapStage.Mapping?
        // Never return (or throw) while a batch is still being read, mapped or written.
        defer {
            if reader.isBusy { _ = try? reader.wait() }
            _ = try? mapping?.work.wait()
            if writer.isBusy { _ = try? writer.wait() }
        }
        // Batches mapped and passed on: the reader reads the next ones into their buffers.
        let spares = Mutex<[DocumentBatch]>([])
        // A single batch is read right here: there is nothing to overlap it with.
        var ahead: DocumentBatch? = total <= batchSize ? try cpu.measure(.reading) { try readBatch(after: since, upTo: latest) } : nil
        if ahead == nil { reader.start { [self] in try cpu.measure(.reading) { try readBatch(after: since, upTo: latest) } } }
        /// The next batch read, its mapping started, and the one after it being read.
        func startNext() throws -> MapStage.Mapping? {
            let documents = try ahead.take() ?? (reader.isBusy ? reader.wait() : DocumentBatch())
            guard let last = documents.sequences.last else { return nil }
            if last < latest {
                reader.start { [self] in
                    try cpu.measure(.reading) { try readBatch(after: last, upTo: latest, into: spares.withLock { $0.popLast() }) }
                }
            }
            return mapStage.start(documents, since: startSequences)
        }
        mapping = try startNext()
        while let current = mapping {
            // The workers take the next batch as they finish this one, while
            // this thread passes this one's rows on.
            mapping = try startNext()
            let parts = try current.work.wait()
            let documents = current.documents
            let last = documents.sequences.last!
            let errors = logMapErrors(parts, of: documents, targets: targets)
            mapped(documents.count, errors)
            var jobs: [(batch: MappedBatch, targets: [Int])] = []
            let behind = steady.filter { startSequences[$0] < last }
            if !behind.isEmpty { jobs.append((cpu.measure(.gathering) { MappedBatch(joining: parts, of: documents) }, behind)) }
            if !bulk.isEmpty {
                let limit = scattered.isSet ? flushBytes : max(1, flushBytes / 8)
                cpu.measure(.gathering) {
                    let first = pending.documentCount == 0
                    pending.append(parts, of: documents)
                    if first {
                        // Room for what may gather before the flush: half a flush past
                        // its limit and a batch, or every document left.
                        let perDocument = max(1, pending.memoryBytes / max(1, pending.documentCount))
                        pending.reserveCapacity(documents: pending.documentCount + min(Int(latest - last), (limit * 3 / 2) / perDocument + batchSize))
                    }
                }
                if last >= latest || Self.flushesNow(pendingBytes: pending.memoryBytes, pendingDocuments: pending.documentCount,
                                                     remainingDocuments: latest - last, flushBytes: limit) {
                    if !spillDecided {
                        spillDecided = true
                        let new = bulk.filter { targets[$0].fresh && startSequences[$0] == 0 }
                        if last < latest, !new.isEmpty,
                           Self.spills(pendingBytes: pending.memoryBytes, pendingDocuments: pending.documentCount,
                                       remainingDocuments: latest - last, flushBytes: flushBytes, flushes: spillFlushes) {
                            spilled.start(Dictionary(uniqueKeysWithValues: new.map { ($0, startStates[$0]) }))
                            // Rows go to runs: each flush costs what its rows take, so it takes a whole buffer.
                            scattered.set()
                        }
                    }
                    jobs.append((pending, bulk))
                    pending = MappedBatch()
                }
            }
            spares.withLock { $0.append(documents) }
            guard !jobs.isEmpty else { continue }
            if writer.isBusy { states = try writer.wait() }
            if last >= latest {
                // The last batch: nothing left to overlap its writing with.
                states = try cpu.measure(.writing) { [states] in
                    try write(jobs, targets: targets, states: states, scattered: scattered, deferred: deferred, spilled: spilled,
                              final: alongside, cpu: cpu)
                }
            } else {
                let before = states
                writer.start { [self, targets, jobs] in
                    try cpu.measure(.writing) {
                        try write(jobs, targets: targets, states: before, scattered: scattered, deferred: deferred, spilled: spilled)
                    }
                }
            }
        }
        if writer.isBusy { states = try writer.wait() }
        // The changes ran out before `latest` (documents written again since it
        // was read have moved past it): what is gathered still goes in.
        if pending.documentCount > 0 {
            states = try cpu.measure(.writing) { [states] in
                try write([(pending, bulk)], targets: targets, states: states, scattered: scattered, deferred: deferred, spilled: spilled,
                          final: alongside, cpu: cpu)
            }
        }
        let toMerge = spilled.indices.reduce(0) { $0 + spilled[$1].entryCount }
        var merged = 0
        if toMerge > 0 { merging(0, toMerge) }
        for index in spilled.indices {
            try cpu.measure(.writing) {
                try mergeSpilled(targets[index], index: index, runs: spilled, alongside: alongside, cpu: cpu) { entries in
                    merged += entries
                    merging(merged, toMerge)
                }
            }
        }
    }

    /// The end of an update, once every batch is written: the changed chunks
    /// of steady targets with a JavaScript reduce (computed outside the
    /// writes that changed their rows), then, for the indexes not yet
    /// current, their chunks from all their rows in one pass (bulk builds)
    /// and their checkpoint at `latest`, in one transaction.
    private func finish(targets: [Target], states: inout [ViewIndexState], latest: UInt64, deferred: DeferredChunks,
                        alongside: ComputedChunks, releasesMemory: Bool, cpu: IndexingCPU) throws {
        try cpu.measure(.writing) { try updateDeferredChunks(deferred, targets: targets, states: &states) }
        // Nothing changed past the last document read: the indexes are current.
        guard states.contains(where: { $0.sequence < latest || !$0.chunksCurrent }) else { return }
        // Those computed alongside the last write of their rows need no pass over the rows.
        var chunks = alongside.taken()
        let remaining = targets.indices.filter { !states[$0].chunksCurrent && chunks[targets[$0].tables.signature] == nil }
        chunks.merge(try computeChunks(of: remaining.map { targets[$0] }, cpu: cpu)) { $1 }
        try cpu.measure(.writing) { [states] in try store.environment.write(durable: false) { transaction in
            for (target, var state) in zip(targets, states) where state.sequence < latest || !state.chunksCurrent {
                try checkStillThere(target, state: state, in: transaction)
                if !state.chunksCurrent, let entries = chunks[target.tables.signature] {
                    try transaction.clear(target.tables.chunks)
                    try Self.writeChunks(entries, intoEmpty: target.tables.chunks, in: transaction)
                    state.chunksCurrent = true
                }
                state.sequence = max(state.sequence, latest)
                try indexes.setState(state, for: target.tables.signature, in: transaction)
            }
        } }
        if releasesMemory {
            store.environment.releaseMappedPages()
            ProcessMemory.returnFreeMemory()
        }
    }

    /// The indexes of `views` an update to `latest` writes (those behind it,
    /// or without their chunks), with their states and how each is kept up:
    /// batch by batch, or in bulk (new, or changes past a sixteenth of its
    /// rows); and whether one of them is a new index.
    private func plan(_ views: [ViewDefinition], latest: UInt64, purgeSequence: UInt64,
                      cpu: IndexingCPU) throws -> (targets: [Target], states: [ViewIndexState], started: Bool) {
        var targets: [Target] = []
        var states: [ViewIndexState] = []
        var started = false
        for view in views {
            let tables = try indexes.tables(for: view.signature)
            let existing = try store.environment.read { try indexes.state(view.signature, in: $0) }
            var state = existing ?? ViewIndexState(designDocument: view.designDocument, view: view.name)
            // A new index has no rows of documents purged before it.
            if existing == nil { state.purgeSequence = purgeSequence }
            guard state.sequence < latest || !state.chunksCurrent else { continue }
            // Only an index this update writes counts (an empty database starts none).
            started = started || existing == nil
            // Built from its first document: whatever its tables hold is left from a merge cut short.
            if state.sequence == 0 && state.rowCount == 0 { try clearLeftovers(tables) }
            let pending = Int(latest - min(latest, state.sequence))
            var reducer: Reducer?
            if let reduce = view.reduce, view.builtinReducer != .approximateCountDistinct {
                reducer = try Reducer(source: reduce, view: view, workers: workers, chunk: 1000, cpu: cpu, logger: logger)
            }
            targets.append(Target(
                view: view, tables: tables, reducer: reducer, fresh: state.rowCount == 0,
                bulk: !state.chunksCurrent || (state.rowCount == 0 && state.sequence == 0) || pending * 16 > max(state.rowCount, Self.bulkRowsFloor),
                existed: existing != nil))
            states.append(state)
        }
        return (targets, states, started)
    }

    /// Whether rows gathered for bulk targets go to the indexes now (before the
    /// run's end): once they reach `flushBytes` — unless the documents still
    /// to map, at the rate so far, would add so little that the flush at the
    /// end can take everything within half a flush more. A flush just before
    /// the last would cost a pass over each index (for keys in no order,
    /// nearly every page of it) and spare little memory.
    package static func flushesNow(pendingBytes: Int, pendingDocuments: Int, remainingDocuments: UInt64, flushBytes: Int) -> Bool {
        guard pendingBytes >= flushBytes else { return false }
        let perDocument = Double(pendingBytes) / Double(max(1, pendingDocuments))
        return Double(pendingBytes) + perDocument * Double(remainingDocuments) > Double(flushBytes) * 1.5
    }

    /// The chunk entries of these targets' indexes (by signature), computed
    /// from their committed rows, each index on its own read transaction and
    /// thread, all at once.
    private func computeChunks(of targets: [Target], cpu: IndexingCPU) throws -> [String: [StoredReductions.Entry]] {
        let results = Mutex<[String: Result<[StoredReductions.Entry], any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: targets.count) { index in
            let target = targets[index]
            let entries = Result {
                try cpu.measure(.writing) { try store.environment.read { transaction in
                    var entries: [StoredReductions.Entry] = []
                    try StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
                        .computeChunks(from: transaction) { entries.append(($0, $1)) }
                    return entries
                } }
            }
            results.withLock { $0[target.tables.signature] = entries }
        }
        return try results.withLock { $0 }.mapValues { try $0.get() }
    }

    /// Computes the chunks holding rows that steady updates changed, for the
    /// targets whose reducer may not run inside a write (JavaScript: a call
    /// may take up to its timeout, and every writer of every process would
    /// wait for it). The rows went in with their chunks marked stale (queries
    /// walk the rows meanwhile); each index's changed chunks are computed on
    /// a read snapshot, then put in a short write that first checks the
    /// index's state is still the one this update committed.
    private func updateDeferredChunks(_ deferred: DeferredChunks, targets: [Target], states: inout [ViewIndexState]) throws {
        for (index, pending) in deferred.taken() {
            let target = targets[index]
            let reductions = StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
            /// Whether the index is still as this update committed it. Builds of
            /// an index take turns across processes (``IndexBuildLocks``), so
            /// it differs only once another process removed it; should it
            /// differ otherwise, the rebuild at the update's end makes its chunks.
            func isAsCommitted(in transaction: LMDBTransaction) throws -> Bool {
                let state = try indexes.state(target.tables.signature, in: transaction)
                if state == nil { throw IndexRemovedError(view: target.view.path, signature: target.tables.signature) }
                return state == pending.committed
            }
            let entries = try store.environment.read { transaction in
                try isAsCommitted(in: transaction) ? try reductions.computeChanged(StoredReductions.ChangedKeys(pending.changed), from: transaction) : nil
            }
            guard let entries else { continue }
            let written = try store.environment.write(durable: false) { transaction in
                guard try isAsCommitted(in: transaction) else { return false }
                for (key, value) in entries { try transaction.put(target.tables.chunks, key, value) }
                var state = pending.committed
                state.chunksCurrent = true
                try indexes.setState(state, for: target.tables.signature, in: transaction)
                return true
            }
            if written { states[index].chunksCurrent = true }
        }
    }

    /// Steady targets whose changed chunks wait for ``updateDeferredChunks(_:targets:states:)``:
    /// the stored keys of their changed rows, and the state last committed
    /// for them (which the chunks are computed against).
    private final class DeferredChunks: Sendable {
        struct Pending: Sendable {
            var changed: Set<[UInt8]> = []
            var committed: ViewIndexState
        }

        private let pending = Mutex<[Int: Pending]>([:])

        /// After a commit that wrote these targets' states: the changed keys
        /// of those whose chunks wait, and the state now committed for each
        /// target already waiting.
        func committed(_ states: [Int: ViewIndexState], changed: [Int: [[UInt8]]]) {
            pending.withLock { pending in
                for (index, keys) in changed {
                    pending[index, default: Pending(committed: states[index]!)].changed.formUnion(keys)
                }
                for (index, state) in states where pending[index] != nil { pending[index]!.committed = state }
            }
        }

        /// Everything waiting, which stops waiting.
        func taken() -> [(Int, Pending)] {
            pending.withLock { pending in
                defer { pending = [:] }
                return pending.sorted { $0.key < $1.key }
            }
        }
    }

    /// Writes chunk entries into their emptied table. Each level's entries
    /// come in key order (the order of the rows they were computed from) and
    /// its key starts with the level, so level by level they go in appended;
    /// should one come out of order, it and the rest are put.
    private static func writeChunks(_ entries: [StoredReductions.Entry], intoEmpty table: LMDBTable, in transaction: LMDBTransaction) throws {
        // By level, and in the order they came within a level.
        let order = entries.indices.sorted { (entries[$0].key.first ?? 0, $0) < (entries[$1].key.first ?? 0, $1) }
        try transaction.withCursor(table) { cursor in
            var appending = true
            var previous: [UInt8] = []
            for index in order {
                let (key, value) = entries[index]
                try key.withUnsafeBytes { key in
                    appending = appending && compareBytes(key, previous) > 0
                    try value.withUnsafeBytes { try cursor.put(key, $0, append: appending) }
                }
                previous = key
            }
        }
    }

    /// Reads the next changed documents, each as map functions see it, into
    /// one buffer: a batch of ``batchSize`` documents, or fewer when they are
    /// large. `spare` is a batch mapped before, whose buffers it reuses.
    private func readBatch(after since: UInt64, upTo latest: UInt64, into spare: consuming DocumentBatch? = nil) throws -> DocumentBatch {
        var batch = spare.take() ?? DocumentBatch()
        try store.environment.read { transaction in
            batch.removeAll()
            batch.sequences.reserveCapacity(batchSize)
            batch.json.reserveCapacity(batchSize * 512)
            try store.forEachChange(since: since, in: transaction) { sequence, id, record in
                guard sequence <= latest else { return false }
                batch.sequences.append(sequence)
                batch.ids.append(id)
                if !record.isDeleted {
                    record.appendFullJSON(id: id, into: &batch.json)
                    // Map functions see `_conflicts` and `_deleted_conflicts`, as in CouchDB.
                    try store.appendConflicts(of: record, key: id, to: &batch.json, deleted: true, in: transaction)
                }
                batch.jsonEnds.append(batch.json.count)
                return batch.sequences.count < batchSize && batch.json.count < Self.batchBytes
            }
        }
        // Read once: the documents' pages needn't stay this process's memory.
        if batch.count >= Self.releaseThreshold { store.environment.releaseMappedPages() }
        return batch
    }

    /// Logs each map call of the batch that threw, and returns them.
    private func logMapErrors(_ parts: [MappedBatch], of documents: DocumentBatch, targets: [Target]) -> [MapError] {
        var errors: [MapError] = []
        for (index, target, error) in parts.lazy.flatMap(\.errors) {
            let view = targets[target].view
            let id = documents.ids.string(index)
            // CouchDB's words (views.js handleViewError), the thrown value as its errstr shows it.
            let thrown = error.thrownSource.isEmpty ? error.message : error.thrownSource
            logger.info("function raised exception \(thrown) with doc._id \(id)", metadata: [
                "doc.id": "\(id)",
                "view.ddoc": "\(view.designDocument)", "view.name": "\(view.name)",
                "error": "\(error)",
            ])
            errors.append(MapError(designDocument: view.designDocument, view: view.name, documentID: id, message: error.message))
        }
        return errors
    }

    /// Writes batches in one transaction, each to its targets, and returns
    /// every target's state; sets `scattered` when a bulk target's rows went
    /// in scattered.
    private func write(_ jobs: [(batch: MappedBatch, targets: [Int])], targets: [Target], states: [ViewIndexState],
                       scattered: Flag, deferred: DeferredChunks, spilled: SpilledRuns, final: ComputedChunks? = nil,
                       cpu: IndexingCPU? = nil) throws -> [ViewIndexState] {
        // Spilled targets' rows go to runs, outside the transaction.
        var states = states
        for (batch, selected) in jobs {
            for index in selected where spilled.isSpilling(index) {
                states[index] = try spill(batch, target: targets[index], index: index, state: states[index], runs: spilled)
            }
        }
        let jobs = jobs.map { job in (batch: job.batch, targets: job.targets.filter { !spilled.isSpilling($0) }) }.filter { !$0.targets.isEmpty }
        if jobs.isEmpty { return states }
        let written = jobs.flatMap(\.targets)
        let result: [ViewIndexState]
        var deferredKeys: [Int: [[UInt8]]] = [:]
        do {
            result = try store.environment.write(durable: false) { transaction in
                var result = states
                var wroteRows = false
                deferredKeys = [:]
                for (batch, selected) in jobs {
                    for index in selected {
                        try checkStillThere(targets[index], state: states[index], in: transaction)
                        let outcome = try write(batch, to: targets[index], index: index, state: states[index], in: transaction,
                                                alongside: final, cpu: cpu)
                        result[index] = outcome.state
                        if let keys = outcome.deferred { deferredKeys[index, default: []].append(contentsOf: keys) }
                        wroteRows = wroteRows || outcome.wroteRows
                        if targets[index].bulk && outcome.placement.isScattered { scattered.set() }
                    }
                }
                if !wroteRows, written.allSatisfy({ checkpointOnly(targets[$0], before: states[$0], after: result[$0]) }) {
                    throw CheckpointOnly(states: result)
                }
                return result
            }
        } catch let only as CheckpointOnly {
            // Rolled back: the checkpoints are kept in memory instead.
            for index in written {
                indexes.keepCheckpoint(targets[index].tables.signature, from: states[index].sequence, to: only.states[index].sequence)
            }
            return only.states
        }
        deferred.committed(Dictionary(written.map { ($0, result[$0]) }, uniquingKeysWith: { $1 }), changed: deferredKeys)
        if jobs.contains(where: { $0.batch.documentCount >= Self.releaseThreshold }) { store.environment.releaseMappedPages() }
        return result
    }

    /// Throws ``IndexRemovedError`` when an index this update has committed
    /// to (or that existed when it began) has no state in `transaction`:
    /// another process removed it meanwhile (its design document changed
    /// there). Writing on would bring back an index holding only the rows
    /// written from here on, under a state that claims them all.
    func checkStillThere(_ target: Target, state: ViewIndexState, in transaction: LMDBTransaction) throws {
        guard target.existed || state.sequence > 0 else { return }
        if try indexes.snapshot(target.tables.signature, in: transaction) == nil {
            throw IndexRemovedError(view: target.view.path, signature: target.tables.signature)
        }
    }

    /// Thrown to roll back a write that changed no index but its checkpoint.
    private struct CheckpointOnly: Error {
        let states: [ViewIndexState]
    }

    /// Committed checkpoints may trail by this many sequences: past it, an
    /// update commits even when only its checkpoint moved, so that a restart
    /// (which forgets uncommitted checkpoints) has little to map again.
    private static let uncommittedSequences: UInt64 = 1024

    /// Whether an index kept up batch by batch, whose rows the write left as
    /// they were, changed nothing in its state but the sequence, with its
    /// committed checkpoint recent enough to stay as it is.
    private func checkpointOnly(_ target: Target, before: ViewIndexState, after: ViewIndexState) -> Bool {
        var unchanged = after
        unchanged.sequence = before.sequence
        guard !target.bulk, unchanged == before else { return false }
        let committed = indexes.committedSequence(target.tables.signature, current: before.sequence)
        return after.sequence - committed <= Self.uncommittedSequences
    }

    /// Writes a batch's documents that the index hasn't seen: their old rows
    /// out, the back index in id order, the new rows in key order (appended
    /// past the table's last key), chunks kept up (unless bulk), the state.
    private func write(_ batch: MappedBatch, to target: Target, index: Int, state before: ViewIndexState,
                       in transaction: LMDBTransaction, alongside: ComputedChunks?, cpu: IndexingCPU?) throws -> (state: ViewIndexState, wroteRows: Bool, placement: SortedRows.Placement,
                                                                   deferred: [[UInt8]]?) {
        var state = before
        var changed: [[UInt8]]? = target.bulk ? nil : []
        var rows = SortedRows(capacity: batch.rows.count)
        let placement = try batch.bytes.withUnsafeBytes { bytes in
            var chunks: BackgroundJob<[StoredReductions.Entry]>?
            defer { if let chunks, chunks.isBusy { _ = try? chunks.wait() } }
            try batch.ids.bytes.withUnsafeBytes { idBytes in
                func id(_ document: Int) -> UnsafeRawBufferPointer {
                    UnsafeRawBufferPointer(rebasing: idBytes[batch.ids.range(document)])
                }
                var documents = batch.sequences.indices.filter { batch.sequences[$0] > before.sequence }
                documents.sort { compareBytes(id($0), id($1)) < 0 }
                if target.fresh {
                    // A new index takes all its documents' rows: sorted first, so
                    // that on the update's last write its chunks are computed
                    // meanwhile (from a snapshot of the rows before it).
                    rows.add(rowsOf: documents, in: batch, target: index)
                    rows.sort(in: bytes)
                    if alongside != nil && target.bulk { chunks = startChunks(rows, of: batch, target: target, cpu: cpu) }
                }
                let appendsBack = try target.fresh && documents.first.map { try transaction.isAfterLastKey(target.tables.back, id($0)) } ?? false
                var documentRows: [MappedRow] = []
                var keys: [UnsafeRawBufferPointer] = []
                var values: [UnsafeRawBufferPointer] = []
                var scratch: [UInt8] = []
                // The changed documents' old rows, deleted together in key order.
                var oldKeys = PackedByteStrings()
                // One cursor for the back index: ids in order find their pages from the last one's.
                try transaction.withCursor(target.tables.back) { backCursor in
                    if target.fresh {
                        // No old rows to look for: the entries go straight in.
                        return try indexes.setNewBackIndexes(of: documents, in: batch, target: index, bytes: bytes, idBytes: idBytes,
                                                             cursor: backCursor, append: appendsBack)
                    }
                    for document in documents {
                        documentRows.removeAll(keepingCapacity: true)
                        keys.removeAll(keepingCapacity: true)
                        values.removeAll(keepingCapacity: true)
                        for row in batch.rows(of: document) where row.target == index {
                            documentRows.append(row)
                            keys.append(UnsafeRawBufferPointer(rebasing: bytes[Int(row.keyStart)..<Int(row.valueStart)]))
                            values.append(UnsafeRawBufferPointer(rebasing: bytes[Int(row.valueStart)..<Int(row.valueStart + row.valueLength)]))
                        }
                        // A change the view doesn't see (same rows as before) writes nothing.
                        guard let removed = try indexes.replaceRows(of: id(document), keys: keys, values: values, in: target.tables,
                                                                    cursor: backCursor, transaction: transaction, scratch: &scratch,
                                                                    oldKeys: &oldKeys) else { continue }
                        state.rowCount -= removed
                        for row in documentRows { rows.add(row) }
                    }
                }
                try indexes.deleteRows(oldKeys, from: target.tables, transaction: transaction, removed: &changed)
            }
            if !target.fresh { rows.sort(in: bytes) }
            // A fresh index has no old rows to remove: this is the
            // transaction's first write to its rows table.
            let placement = try rows.write(to: target.tables.rows, bytes: bytes, in: transaction, mayRewrite: target.fresh, changed: &changed)
            if let chunks { alongside?.keep(try chunks.wait(), for: target.tables.signature) }
            return placement
        }
        state.mapErrors += batch.errors.count { $0.target == index && batch.sequences[$0.document] > before.sequence }
        state.rowCount += rows.entries.count
        var deferred: [[UInt8]]?
        if let changed {
            let reductions = StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
            if reductions.updatesInWrite {
                try reductions.update(changed: changed, in: transaction)
            } else if !changed.isEmpty {
                // No JavaScript while holding the writer lock: the chunks holding
                // these rows are recomputed after this commits (updateDeferredChunks).
                try reductions.markBoundaries(changed: changed, in: transaction)
                state.chunksCurrent = false
                deferred = changed
            }
        } else {
            state.chunksCurrent = false
        }
        state.sequence = max(state.sequence, batch.sequences.last!)
        try indexes.setState(state, for: target.tables.signature, in: transaction)
        return (state, changed.map { !$0.isEmpty } ?? true, placement, deferred)
    }

    /// Starts computing the chunks of `target`'s rows as the write of
    /// `rows` (sorted, from `batch`) will leave them, on a snapshot of the
    /// rows before it (see ``StoredReductions/computeChunks(merging:bytes:withRowsOf:_:)``),
    /// or returns nil when the reducer may not run inside a write. To be
    /// called in the write transaction: the snapshot is then the one it began on.
    private func startChunks(_ rows: SortedRows, of batch: MappedBatch, target: Target,
                             cpu: IndexingCPU?) -> BackgroundJob<[StoredReductions.Entry]>? {
        let reductions = StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
        guard reductions.updatesInWrite else { return nil }
        let job = BackgroundJob<[StoredReductions.Entry]>(label: "settee.index.chunks")
        let buffer = batch.bytes
        job.start { [store] in
            func compute() throws -> [StoredReductions.Entry] {
                try store.environment.read { snapshot in
                    try buffer.withUnsafeBytes { bytes in
                        var entries: [StoredReductions.Entry] = []
                        try reductions.computeChunks(merging: rows, bytes: bytes, withRowsOf: snapshot) { entries.append(($0, $1)) }
                        return entries
                    }
                }
            }
            return try cpu.map { try $0.measure(.writing, compute) } ?? compute()
        }
        return job
    }

    /// Chunk entries computed alongside the last write of their index's
    /// rows in an update, by index signature, for its end to store.
    final class ComputedChunks: Sendable {
        private let entries = Mutex<[String: [StoredReductions.Entry]]>([:])

        func keep(_ computed: [StoredReductions.Entry], for signature: String) {
            entries.withLock { $0[signature] = computed }
        }

        /// Everything kept, which is let go.
        func taken() -> [String: [StoredReductions.Entry]] {
            entries.withLock { entries in
                defer { entries = [:] }
                return entries
            }
        }
    }

    // MARK: Purge

    /// Removes, in one write, the rows of the documents purged since each
    /// index's purge sequence (through its back index), and brings the
    /// indexes to `purgeSequence`. Chunks are kept up as a steady write keeps
    /// them; a JavaScript reduce's wait for the update's end (`deferred`).
    private func removePurgedRows(targets: [Target], states: inout [ViewIndexState], upTo purgeSequence: UInt64,
                                  deferred: DeferredChunks) throws {
        var changedKeys: [Int: [[UInt8]]] = [:]
        let result = try store.environment.write(durable: false) { transaction in
            var result = states
            for index in targets.indices where states[index].purgeSequence < purgeSequence {
                let target = targets[index]
                try checkStillThere(target, state: states[index], in: transaction)
                var changed: [[UInt8]]? = []
                try removeRows(purgedAfter: states[index].purgeSequence, upTo: purgeSequence, from: target.tables,
                               state: &result[index], in: transaction, removed: &changed)
                if let changed, !changed.isEmpty {
                    let reductions = StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
                    if target.bulk || !result[index].chunksCurrent {
                        // Rebuilt from the rows at the update's end.
                        result[index].chunksCurrent = false
                    } else if reductions.updatesInWrite {
                        try reductions.update(changed: changed, in: transaction)
                    } else {
                        try reductions.markBoundaries(changed: changed, in: transaction)
                        result[index].chunksCurrent = false
                        changedKeys[index] = changed
                    }
                }
                try indexes.setState(result[index], for: target.tables.signature, in: transaction)
            }
            return result
        }
        states = result
        if !changedKeys.isEmpty {
            deferred.committed(Dictionary(changedKeys.keys.map { ($0, result[$0]) }, uniquingKeysWith: { $1 }), changed: changedKeys)
        }
    }

    /// A flag any thread may set, once and for good.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)

        var isSet: Bool { value.load(ordering: .relaxed) }

        func set() { value.store(true, ordering: .relaxed) }
    }
}


/// An index was removed (by another process whose design document edit left
/// it unused) while this process was building it or about to answer from it.
/// Queries take the design document afresh and run again; it reaches callers
/// only when that keeps happening.
package struct IndexRemovedError: SetteeError {
    /// `DDOC/VIEW`.
    package let view: String
    package let signature: String

    package var errorCode: SetteeErrorCode { .conflict }

    package var description: String {
        "the index of view \(view) (signature \(signature.prefix(12))…) was removed while in use: its design document was changed by another writer; query again"
    }
}
