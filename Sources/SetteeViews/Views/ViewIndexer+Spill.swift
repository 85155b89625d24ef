import Foundation
import Synchronization
import SetteeCore
@_spi(LMDB) import SetteeStorage

/// A large new index's rows, spilled to disk in sorted runs and merged once.
///
/// Written into its table flush by flush, a new index whose keys come in no
/// order would be rewritten whole at each flush (or have nearly every page
/// copied by inserts): the work grows with the square of its size, and the
/// last flush dirties every page of the index, which LMDB holds in memory
/// until it commits and keeps for later writes until the database closes.
/// So an update that builds an index from its first document, and whose
/// rows would take more than ``ViewIndexer/spillFlushes`` flushes, writes
/// each flush's rows and back-index entries as two ``SortedRun``s instead
/// (files, nothing committed), then merges the runs into the empty tables,
/// appended in key order, in write transactions of ``mergeTransactionBytes``
/// each; the chunks and the checkpoint follow at the update's end. Every
/// row is written once, and what LMDB holds is bounded by one transaction.
///
/// Nothing of the index is committed before the merge: its first
/// transaction records the index as new (sequence 0, no rows), and an
/// update that starts from there — the merge cut short by a crash or a
/// failure — clears whatever it left first (``ViewIndexer/plan``). Each
/// transaction of the merge checks that the index is still there (another
/// process may remove it when its design document changes).
extension ViewIndexer {
    /// Bytes of entries each write transaction of a merge appends.
    static let mergeTransactionBytes = 8 << 20

    /// The targets of an update whose rows go to sorted runs, and their runs.
    final class SpilledRuns: Sendable {
        private let runs = Mutex<[Int: (rows: [SortedRun], back: [SortedRun])]>([:])

        /// From now on, these targets' flushes are spilled.
        func start(_ targets: [Int]) {
            runs.withLock { runs in
                for target in targets { runs[target] = ([], []) }
            }
        }

        func isSpilling(_ target: Int) -> Bool {
            runs.withLock { $0[target] != nil }
        }

        /// The targets spilled, in order.
        var targets: [Int] {
            runs.withLock { $0.keys.sorted() }
        }

        func add(rows: SortedRun, back: SortedRun, to target: Int) {
            runs.withLock { runs in
                runs[target]!.rows.append(rows)
                runs[target]!.back.append(back)
            }
        }

        /// A target's runs, which it lets go.
        func take(_ target: Int) -> (rows: [SortedRun], back: [SortedRun]) {
            runs.withLock { runs in
                defer { runs[target] = ([], []) }
                return runs[target] ?? ([], [])
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
    /// order; returns the target's state as it will be once they are merged.
    func spill(_ batch: MappedBatch, target index: Int, state before: ViewIndexState, runs: SpilledRuns) throws -> ViewIndexState {
        let rowsRun = try SortedRun(in: store.environment.path)
        let backRun = try SortedRun(in: store.environment.path)
        var rows = SortedRows(capacity: batch.rows.count)
        try batch.bytes.withUnsafeBytes { bytes in
            try batch.ids.bytes.withUnsafeBytes { idBytes in
                func id(_ document: Int) -> UnsafeRawBufferPointer {
                    UnsafeRawBufferPointer(rebasing: idBytes[batch.ids.range(document)])
                }
                var documents = batch.sequences.indices.filter { batch.sequences[$0] > before.sequence }
                documents.sort { compareBytes(id($0), id($1)) < 0 }
                for document in documents {
                    for row in batch.rows[batch.documentRows[document]..<batch.documentRows[document + 1]] where row.target == index {
                        rows.add(row)
                    }
                }
                rows.sort(in: bytes)
                let base = bytes.baseAddress!
                for entry in rows.entries {
                    let keyStart = Int(entry.keyStart)
                    let valueStart = keyStart + Int(entry.keyLength)
                    try rowsRun.append(key: UnsafeRawBufferPointer(start: base + keyStart, count: Int(entry.keyLength)),
                                       value: UnsafeRawBufferPointer(start: base + valueStart, count: Int(entry.valueLength)))
                }
                try indexes.forEachNewBackEntry(of: documents, in: batch, target: index, bytes: bytes, idBytes: idBytes) { id, entry in
                    try backRun.append(key: id, value: entry)
                }
            }
        }
        try rowsRun.finishWriting()
        try backRun.finishWriting()
        runs.add(rows: rowsRun, back: backRun, to: index)
        var state = before
        state.rowCount += rows.entries.count
        state.mapErrors += batch.errors.count { $0.target == index && batch.sequences[$0.document] > before.sequence }
        state.chunksCurrent = false
        state.sequence = max(state.sequence, batch.sequences.last!)
        return state
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

    /// Merges a spilled target's runs into its (empty) tables, in write
    /// transactions of ``mergeTransactionBytes``, and computes its chunks
    /// meanwhile (kept in `alongside`) unless its reducer is JavaScript.
    /// `new` is the target's state before the update (no rows), which the
    /// first transaction records.
    func mergeSpilled(_ target: Target, index: Int, new: ViewIndexState, runs: SpilledRuns,
                      alongside: ComputedChunks, cpu: IndexingCPU) throws {
        let (rowRuns, backRuns) = runs.take(index)
        // The chunks, from the same rows merged once more, on a thread of their own.
        let reductions = StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
        var chunks: BackgroundJob<[StoredReductions.Entry]>?
        if reductions.updatesInWrite {
            let job = BackgroundJob<[StoredReductions.Entry]>(label: "settee.index.chunks")
            job.start {
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
            "view": "\(target.view.path)", "runs": "\(rowRuns.count)", "rows": "\(rowRuns.reduce(0) { $0 + $1.count })",
        ])
        var new = new
        new.chunksCurrent = false
        var first = true
        for (table, tableRuns) in [(target.tables.rows, rowRuns), (target.tables.back, backRuns)] {
            var merge = SortedRunMerge(tableRuns)
            var done = false
            while !done {
                let start = merge.position
                done = try store.environment.write(durable: false) { transaction in
                    // Again from the start should the map fill (the write then runs again).
                    merge.restore(start)
                    if first {
                        // Its tables were emptied when the update began (clearLeftovers).
                        try checkStillThere(target, state: new, in: transaction)
                        try indexes.setState(new, for: target.tables.signature, in: transaction)
                    } else if try indexes.snapshot(target.tables.signature, in: transaction) == nil {
                        throw IndexRemovedError(view: target.view.path, signature: target.tables.signature)
                    }
                    return try transaction.withCursor(table) { cursor in
                        var bytes = 0
                        while bytes < Self.mergeTransactionBytes {
                            guard let (key, value) = merge.next() else { return true }
                            try cursor.put(key, value, append: true)
                            bytes += key.count + value.count + 16
                        }
                        return false
                    }
                }
                first = false
            }
        }
        if let chunks { alongside.keep(try chunks.wait(), for: target.tables.signature) }
    }
}
