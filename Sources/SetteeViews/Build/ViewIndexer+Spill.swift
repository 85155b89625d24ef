import Foundation
import Synchronization
import SetteeCore
@_spi(LMDB) import SetteeStorage
import Logging

/// A large new index's rows, spilled to disk in sorted runs and merged once.
///
/// Written into its table flush by flush, a new index whose keys come in no
/// order would be rewritten whole at each flush (or have nearly every page
/// copied by inserts): the work grows with the square of its size, and the
/// last flush dirties every page of the index, which LMDB holds in memory
/// until it commits and keeps for later writes until the database closes.
/// So an update that builds an index from its first document, and whose
/// rows would take more than ``ViewIndexer/spillFlushes`` flushes, writes
/// each flush's rows as a ``SortedRun`` instead (a file; nothing of them
/// committed) — and its back-index entries too, unless every flush so far
/// came after the last in id order (documents written in id order), whose
/// entries go straight into the back table, appended — then merges the
/// runs into the tables in key order, in write transactions of
/// ``mergeTransactionBytes`` each; the chunks and the checkpoint follow at
/// the update's end. Every row is written once, and what LMDB holds is
/// bounded by one transaction.
///
/// The first write to the index's tables records it as new (sequence 0,
/// no rows): queries read no rows from an index whose state has none, so
/// until the update's last write records its rows and checkpoint, the
/// index shows none of the rows the merge is putting in (and never rows
/// past its checkpoint). An update that starts from there — a build cut
/// short by a crash or a failure — empties whatever it left first
/// (``ViewIndexer/clearLeftovers(_:)``). Each later write checks that the
/// index is still there (another process may remove it when its design
/// document changes).
extension ViewIndexer {
    /// Bytes of entries each write transaction of a merge appends.
    static let mergeTransactionBytes = 8 << 20

    /// The targets of an update whose rows go to sorted runs, and their runs.
    final class SpilledRuns: Sendable {
        struct Target {
            /// The target's state before the update (a new index's), which
            /// its first write records.
            let new: ViewIndexState
            var rows: [SortedRun] = []
            var back: [SortedRun] = []
            /// Whether a write has recorded `new` (later ones check it is still there).
            var recorded = false
            /// The last id of the documents whose back-index entries went
            /// straight into the table (nil: none did).
            var lastBackID: [UInt8]?

            /// The entries its runs hold.
            var entryCount: Int { (rows + back).reduce(0) { $0 + $1.count } }
        }

        private let targets = Mutex<[Int: Target]>([:])

        /// From now on, these targets' flushes are spilled (each with its state before the update).
        func start(_ new: [Int: ViewIndexState]) {
            targets.withLock { targets in
                for (index, state) in new { targets[index] = Target(new: state) }
            }
        }

        func isSpilling(_ target: Int) -> Bool {
            targets.withLock { $0[target] != nil }
        }

        /// The targets spilled, in order.
        var indices: [Int] {
            targets.withLock { $0.keys.sorted() }
        }

        subscript(target: Int) -> Target {
            get { targets.withLock { $0[target]! } }
            set { targets.withLock { $0[target] = newValue } }
        }

        /// A target's runs, which it lets go.
        func take(_ target: Int) -> Target {
            targets.withLock { targets in
                let taken = targets[target]!
                targets[target]!.rows = []
                targets[target]!.back = []
                return taken
            }
        }
    }

    /// Whether a bulk update's first flush shows that its rows will take
    /// more than `flushes` flushes of `flushBytes`: the rows gathered so
    /// far, and the documents still to map at the rate so far.
    package static func spills(pendingBytes: Int, pendingDocuments: Int, remainingDocuments: UInt64, flushBytes: Int, flushes: Int) -> Bool {
        let perDocument = Double(pendingBytes) / Double(max(1, pendingDocuments))
        return Double(pendingBytes) + perDocument * Double(remainingDocuments) > Double(flushBytes) * Double(flushes)
    }

    /// Writes a flush's rows of a spilled target (documents it hasn't seen)
    /// as a run in key order, and their back-index entries as a run in id
    /// order — or straight into the back table, appended, while the ids
    /// of every flush so far follow the last's (documents written in id
    /// order); returns the target's state as it will be once the runs are merged.
    func spill(_ batch: MappedBatch, target: Target, index: Int, state before: ViewIndexState, runs: SpilledRuns) throws -> ViewIndexState {
        var spilled = runs[index]
        let rowsRun = try SortedRun(in: store.environment.path)
        var backRun: SortedRun?
        var rows = SortedRows(capacity: batch.rows.count)
        try batch.bytes.withUnsafeBytes { bytes in
            try batch.ids.bytes.withUnsafeBytes { idBytes in
                func id(_ document: Int) -> UnsafeRawBufferPointer {
                    UnsafeRawBufferPointer(rebasing: idBytes[batch.ids.range(document)])
                }
                var documents = batch.sequences.indices.filter { batch.sequences[$0] > before.sequence }
                documents.sort { compareBytes(id($0), id($1)) < 0 }
                rows.add(rowsOf: documents, in: batch, target: index)
                rows.sort(in: bytes)
                if let base = bytes.baseAddress {
                    for entry in rows.entries { try rowsRun.append(key: entry.key(at: base), value: entry.value(at: base)) }
                }
                // Only documents with rows have back-index entries: one without (a design
                // document written after the others, whose id sorts first) breaks no order.
                func hasRows(_ document: Int) -> Bool {
                    batch.rows(of: document).contains { $0.target == index }
                }
                guard let first = documents.first(where: hasRows), let last = documents.last(where: hasRows) else { return }
                if spilled.back.isEmpty, spilled.lastBackID.map({ compareBytes(id(first), $0) > 0 }) ?? true {
                    try store.environment.write(durable: false) { transaction in
                        try record(spilled, of: target, in: transaction)
                        try transaction.withCursor(target.tables.back) { cursor in
                            try indexes.forEachNewBackEntry(of: documents, in: batch, target: index, bytes: bytes, idBytes: idBytes) { id, entry in
                                try cursor.put(id, entry, append: true)
                            }
                        }
                    }
                    spilled.recorded = true
                    spilled.lastBackID = Array(id(last))
                } else {
                    let run = try SortedRun(in: store.environment.path)
                    try indexes.forEachNewBackEntry(of: documents, in: batch, target: index, bytes: bytes, idBytes: idBytes) { id, entry in
                        try run.append(key: id, value: entry)
                    }
                    backRun = run
                }
            }
        }
        try rowsRun.finishWriting()
        spilled.rows.append(rowsRun)
        if let backRun {
            try backRun.finishWriting()
            spilled.back.append(backRun)
        }
        runs[index] = spilled
        var state = before
        state.rowCount += rows.entries.count
        state.mapErrors += batch.errors.count { $0.target == index && batch.sequences[$0.document] > before.sequence }
        state.chunksCurrent = false
        state.sequence = max(state.sequence, batch.sequences.last!)
        return state
    }

    /// In a write of a spilled target's tables: the first records the
    /// index as new, the later ones check that it is still there.
    private func record(_ spilled: SpilledRuns.Target, of target: Target, in transaction: LMDBTransaction) throws {
        if spilled.recorded {
            guard try indexes.snapshot(target.tables.signature, in: transaction) != nil else {
                throw IndexRemovedError(view: target.view.path, signature: target.tables.signature)
            }
        } else {
            // Its tables were emptied when the update began (clearLeftovers).
            try checkStillThere(target, state: spilled.new, in: transaction)
            var new = spilled.new
            new.chunksCurrent = false
            try indexes.setState(new, for: target.tables.signature, in: transaction)
        }
    }

    /// Empties the tables of an index about to be built from its first
    /// document, should they hold anything (a merge cut short).
    func clearLeftovers(_ tables: ViewIndexTables) throws {
        let empty = try store.environment.read { transaction in
            try transaction.count(tables.rows) == 0 && transaction.count(tables.back) == 0
        }
        guard !empty else { return }
        logger.info("clearing the rows an index build left unfinished", metadata: ["view.signature": "\(tables.signature)"])
        try store.environment.write(durable: false) { transaction in
            for table in [tables.rows, tables.back, tables.chunks] { try transaction.clear(table) }
        }
    }

    /// Merges a spilled target's runs into its tables (its rows table
    /// empty; its back table empty, or holding the entries of the first
    /// flushes, which the runs' are put among), in write transactions of
    /// ``mergeTransactionBytes``, and computes its chunks meanwhile (kept in
    /// `alongside`) unless its reducer is JavaScript.
    func mergeSpilled(_ target: Target, index: Int, runs: SpilledRuns, alongside: ComputedChunks, cpu: IndexingCPU,
                      committed: (_ entries: Int) -> Void = { _ in }) throws {
        var spilled = runs.take(index)
        // The chunks, from the same rows merged once more, on a thread of their own.
        let reductions = StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
        var chunks: BackgroundJob<[StoredReductions.Entry]>?
        if reductions.updatesInWrite {
            let job = BackgroundJob<[StoredReductions.Entry]>(label: "settee.index.chunks")
            job.start { [rowRuns = spilled.rows] in
                try cpu.measure(.writing) {
                    var merge = SortedRunMerge(rowRuns)
                    var entries: [StoredReductions.Entry] = []
                    try reductions.computeChunks(nextRow: { merge.next() }) { entries.append(($0, $1)) }
                    return entries
                }
            }
            chunks = job
        }
        defer { if let chunks, chunks.isBusy { _ = try? chunks.wait() } }
        logger.info("merging the sorted runs of a new index", metadata: [
            "view": "\(target.view.path)", "runs": "\(spilled.rows.count)", "rows": "\(spilled.rows.reduce(0) { $0 + $1.count })",
        ])
        for (table, tableRuns) in [(target.tables.rows, spilled.rows), (target.tables.back, spilled.back)] {
            var merge = SortedRunMerge(tableRuns)
            // Keys up to the table's last are put among its own; those after it, appended.
            let last = try store.environment.read { transaction in
                try transaction.withCursor(table) { try $0.last().map { Array($0.key) } }
            }
            var done = false
            while !done {
                let start = merge.position
                var entries = 0
                done = try store.environment.write(durable: false) { transaction in
                    // Again from the start should the map fill (the write then runs again).
                    merge.restore(start)
                    entries = 0
                    try record(spilled, of: target, in: transaction)
                    return try transaction.withCursor(table) { cursor in
                        var bytes = 0
                        while bytes < Self.mergeTransactionBytes {
                            guard let (key, value) = merge.next() else { return true }
                            try cursor.put(key, value, append: last.map { compareBytes(key, $0) > 0 } ?? true)
                            bytes += key.count + value.count + 16
                            entries += 1
                        }
                        return false
                    }
                }
                spilled.recorded = true
                committed(entries)
            }
        }
        if let chunks { alongside.keep(try chunks.wait(), for: target.tables.signature) }
    }
}
