import Foundation
import Logging

/// Progress of an index build.
public struct IndexProgress: Sendable {
    /// Changed documents mapped so far.
    public var processed: Int
    /// Changed documents to map in all (an upper bound).
    public var total: Int
}

/// Brings view indexes up to date with the documents, incrementally: from the
/// changes after each index's sequence, a changed document's old rows go and
/// its new rows come, in large write transactions that commit the rows, their
/// stored chunk reductions and the sequence checkpoint together.
///
/// A pipeline: while one thread writes a batch, the next is read (in place,
/// from the read transaction's memory map) and mapped on every JavaScript
/// worker, all the views being updated from one parse of each document.
/// Memory stays bounded by the batch size, whatever the database's size.
struct ViewIndexer {
    let store: DocumentStore
    let indexes: ViewIndexStore
    let workers: JavaScriptWorkerPool
    let logger: Logger
    /// Changed documents per batch: what the workers map at a time.
    var batchSize = 8192
    /// Bulk targets' rows wait in memory and are written in key order once
    /// they reach this many bytes or ``flushDocuments`` documents (or the run
    /// ends): one write transaction each, appending where the keys allow.
    var flushBytes = 48 << 20
    var flushDocuments: Int { batchSize * 32 }

    private static let designPrefix = Array("_design/".utf8)

    /// One index to bring up to date: the views sharing its signature.
    private struct Target: Sendable {
        let view: ViewDefinition
        let tables: ViewIndexTables
        /// The reduce function whose partials the chunks keep (nil: counts only).
        let reducer: Reducer?
        /// The index had no rows: no document has old rows to remove.
        let fresh: Bool
        /// So many changes that the chunks are rebuilt once at the end, not kept up per batch.
        let bulk: Bool
    }

    /// A changed document of the batch being mapped, read in place.
    private struct ChangedDocument: @unchecked Sendable {
        let sequence: UInt64
        let id: UnsafeRawBufferPointer
        let record: DocumentRecord
        let isDesign: Bool
    }

    /// One emitted row, its stored key and value in the batch's `bytes`.
    private struct MappedRow: Sendable {
        var target: Int32
        var keyStart: Int32
        var keyLength: Int32
        var valueLength: Int32
        var valueStart: Int32 { keyStart + keyLength }
    }

    /// What the map functions made of a run of documents: every row's stored
    /// key and value back to back in one buffer, rows in document order.
    private struct MappedBatch: Sendable {
        var sequences: [UInt64] = []
        var ids: [[UInt8]] = []
        var bytes: [UInt8] = []
        var rows: [MappedRow] = []
        /// Per document, the index of its first row in `rows` (one more entry at the end).
        var documentRows: [Int] = [0]
        var errors: [(document: Int, target: Int, error: JavaScriptError)] = []

        /// Appends another batch's documents after this one's.
        mutating func append(_ other: MappedBatch) {
            guard documentRows.count > 1 else {
                self = other
                return
            }
            sequences.append(contentsOf: other.sequences)
            ids.append(contentsOf: other.ids)
            let byteBase = Int32(bytes.count)
            let rowBase = rows.count
            let documentBase = documentRows.count - 1
            bytes.append(contentsOf: other.bytes)
            rows.append(contentsOf: other.rows.lazy.map { var row = $0; row.keyStart += byteBase; return row })
            documentRows.append(contentsOf: other.documentRows.dropFirst().lazy.map { $0 + rowBase })
            errors.append(contentsOf: other.errors.lazy.map { ($0.document + documentBase, $0.target, $0.error) })
        }
    }

    /// Updates the indexes of `views` to the database's latest sequence.
    func update(_ views: [ViewDefinition], progress: (IndexProgress) -> Void = { _ in }) throws {
        var seen = Set<String>()
        let unique = views.filter { seen.insert($0.signature).inserted }
        let latest = try store.lastSequence()
        var targets: [Target] = []
        var states: [ViewIndexState] = []
        for view in unique {
            let tables = try indexes.tables(for: view.signature)
            let state = try store.environment.read { try indexes.state(view.signature, in: $0) }
                ?? ViewIndexState(designDocument: view.designDocument, view: view.name)
            guard state.sequence < latest || !state.chunksCurrent else { continue }
            let pending = Int(latest - min(latest, state.sequence))
            var reducer: Reducer?
            if let reduce = view.reduce, view.builtinReducer != .approximateCountDistinct {
                reducer = try Reducer(source: reduce, view: view, workers: workers, chunk: 1000)
            }
            targets.append(Target(
                view: view, tables: tables, reducer: reducer, fresh: state.rowCount == 0,
                bulk: !state.chunksCurrent || state.rowCount == 0 || pending * 16 > state.rowCount))
            states.append(state)
        }
        guard !targets.isEmpty else { return }
        let since = states.map(\.sequence).min()!
        let wantsSequence = targets.contains { $0.view.localSequence }
        var cursor = since
        var processed = 0
        let total = Int(latest - since)
        if since < latest {
            logger.info("indexing", metadata: ["views": "\(targets.map(\.view.path))", "since": "\(since)", "to": "\(latest)"])
        }
        // Targets kept up batch by batch (chunks and all), and bulk targets whose
        // rows gather in `pending` until a flush.
        let steady = targets.indices.filter { !targets[$0].bulk }
        let bulk = targets.indices.filter { targets[$0].bulk }
        var pending = MappedBatch()
        let writer = BackgroundWriter<[ViewIndexState]>(label: "settee.index.writer")
        // Never return (or throw) while a batch is still being written.
        defer { if writer.isBusy { _ = try? writer.wait() } }
        while cursor < latest {
            let batch = try store.environment.read { transaction in
                let documents = try readBatch(after: cursor, upTo: latest, in: transaction)
                defer {
                    // Read once: their pages needn't stay this process's memory.
                    if let lowest = documents.lazy.map(\.record.bytes.baseAddress!).min(),
                       let highest = documents.lazy.map({ $0.record.bytes.baseAddress! + $0.record.bytes.count }).max() {
                        transaction.releasePages(from: lowest, to: highest)
                    }
                }
                return try map(documents, targets: targets, states: states, withSequence: wantsSequence)
            }
            guard let last = batch.sequences.last else { break }
            logMapErrors(batch, targets: targets)
            if !bulk.isEmpty { pending.append(batch) }
            var jobs: [(batch: MappedBatch, targets: [Int])] = []
            if !steady.isEmpty { jobs.append((batch, steady)) }
            if !bulk.isEmpty && (last >= latest || pending.bytes.count >= flushBytes || pending.sequences.count >= flushDocuments) {
                jobs.append((pending, bulk))
                pending = MappedBatch()
            }
            cursor = last
            processed += batch.sequences.count
            progress(IndexProgress(processed: processed, total: total))
            guard !jobs.isEmpty else { continue }
            if writer.isBusy { states = try writer.wait() }
            if last >= latest {
                // The last batch: nothing left to overlap its writing with.
                states = try write(jobs, targets: targets, states: states)
            } else {
                let before = states
                writer.start { [self, targets, jobs] in try write(jobs, targets: targets, states: before) }
            }
        }
        if writer.isBusy { states = try writer.wait() }
        // Nothing changed past the last document read: the indexes are current.
        // Bulk builds get their chunks now, from all the rows in one pass.
        guard states.contains(where: { $0.sequence < latest || !$0.chunksCurrent }) else { return }
        try store.environment.write(durable: false) { transaction in
            for (target, var state) in zip(targets, states) where state.sequence < latest || !state.chunksCurrent {
                if !state.chunksCurrent {
                    try StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer).rebuild(in: transaction)
                    state.chunksCurrent = true
                }
                state.sequence = max(state.sequence, latest)
                try indexes.setState(state, for: target.tables.signature, in: transaction)
            }
        }
    }

    private func readBatch(after since: UInt64, upTo latest: UInt64, in transaction: LMDBTransaction) throws -> [ChangedDocument] {
        var batch: [ChangedDocument] = []
        batch.reserveCapacity(batchSize)
        try store.forEachChange(since: since, in: transaction) { sequence, id, record in
            guard sequence <= latest else { return false }
            batch.append(ChangedDocument(sequence: sequence, id: id, record: record, isDesign: id.starts(with: Self.designPrefix)))
            return batch.count < batchSize
        }
        return batch
    }

    /// Maps the batch on all workers, each taking a contiguous slice, while the
    /// read transaction the documents point into is open.
    private func map(_ batch: [ChangedDocument], targets: [Target], states: [ViewIndexState], withSequence: Bool) throws -> MappedBatch {
        let views = targets.map(\.view)
        let sequences = states.map(\.sequence)
        let mapSlice: @Sendable (JavaScriptContext, ArraySlice<ChangedDocument>) throws -> MappedBatch = { context, slice in
            // Functions grouped by the document form they need: one parse per document and form.
            var plain: [(target: Int, function: JavaScriptFunction)] = []
            var sequenced: [(target: Int, function: JavaScriptFunction)] = []
            for (index, view) in views.enumerated() {
                let function = try context.compile(view.map, name: "\(view.designDocument)/\(view.name) map", library: view.library.map { $0.jsonText })
                if view.localSequence { sequenced.append((index, function)) } else { plain.append((index, function)) }
            }
            var output = MappedBatch()
            output.documentRows.reserveCapacity(slice.count + 1)
            output.bytes.reserveCapacity(slice.count * 128)
            var fullKey: [UInt8] = []
            var json: [UInt8] = []
            for (position, document) in slice.enumerated() {
                defer { output.documentRows.append(output.rows.count) }
                guard !document.record.isDeleted else { continue }
                json.removeAll(keepingCapacity: true)
                document.record.appendFullJSON(id: document.id, into: &json)
                for (form, group) in [plain, sequenced].enumerated() where !group.isEmpty {
                    let active = group.filter { sequences[$0.target] < document.sequence && (!document.isDesign || views[$0.target].includeDesign) }
                    if active.isEmpty { continue }
                    if form == 1 {
                        json.removeLast()
                        json.append(contentsOf: #","_local_seq":\#(document.sequence)}"#.utf8)
                    }
                    let result = try json.withUnsafeBytes { try context.map($0, functions: active.map(\.function)) }
                    var emitCounts = [UInt32](repeating: 0, count: active.count)
                    _ = try result.forEach(
                        rows: { function, key, value in
                            let target = active[function].target
                            fullKey.removeAll(keepingCapacity: true)
                            try CollationKey.append(json: key, mode: views[target].collation, to: &fullKey)
                            let encodedLength = fullKey.count
                            IndexRow.appendFullKeySuffix(id: document.id, emitIndex: emitCounts[function], to: &fullKey)
                            emitCounts[function] += 1
                            let keyStart = output.bytes.count
                            IndexRow.appendStoredKey(forFullKey: fullKey, to: &output.bytes)
                            let valueStart = output.bytes.count
                            IndexRow.appendValue(fullKey: fullKey, encodedKeyLength: encodedLength, id: document.id,
                                                 keyJSON: key, valueJSON: value, to: &output.bytes)
                            output.rows.append(MappedRow(
                                target: Int32(target), keyStart: Int32(keyStart), keyLength: Int32(valueStart - keyStart),
                                valueLength: Int32(output.bytes.count - valueStart)))
                        },
                        failure: { function, error in
                            output.errors.append((position, active[function].target, error))
                        })
                }
            }
            return output
        }
        let parts: [MappedBatch]
        let workerCount = workers.workers.count
        if batch.count < 64 || workerCount == 1 {
            // A few changes: one worker, no fan-out.
            parts = [try workers.nextWorker().run { context in try mapSlice(context, batch[...]) }]
        } else {
            let slice = (batch.count + workerCount - 1) / workerCount
            parts = try workers.runOnEach { worker, context in
                let start = min(worker * slice, batch.count)
                return try mapSlice(context, batch[start..<min(start + slice, batch.count)])
            }
        }
        var mapped = parts[0]
        for part in parts.dropFirst() { mapped.append(part) }
        mapped.sequences = batch.map(\.sequence)
        mapped.ids = batch.map { Array($0.id) }
        return mapped
    }

    private func logMapErrors(_ batch: MappedBatch, targets: [Target]) {
        for (index, target, error) in batch.errors {
            let view = targets[target].view
            logger.info("map function raised an exception; the document is skipped for this view", metadata: [
                "doc.id": "\(String(decoding: batch.ids[index], as: UTF8.self))",
                "view.ddoc": "\(view.designDocument)", "view.name": "\(view.name)",
                "error": "\(error)",
            ])
        }
    }

    /// Writes batches in one transaction, each to its targets — old rows out,
    /// new rows in key order, back index, chunks (unless bulk), state — and
    /// returns every target's state.
    private func write(_ jobs: [(batch: MappedBatch, targets: [Int])], targets: [Target], states: [ViewIndexState]) throws -> [ViewIndexState] {
        try store.environment.write(durable: false) { transaction in
            var result = states
            var scratch: [UInt8] = []
            for (batch, selected) in jobs {
                for index in selected {
                    result[index] = try write(batch, to: targets[index], index: index, state: states[index], scratch: &scratch, in: transaction)
                }
            }
            return result
        }
    }

    private func write(_ batch: MappedBatch, to target: Target, index: Int, state before: ViewIndexState,
                       scratch: inout [UInt8], in transaction: LMDBTransaction) throws -> ViewIndexState {
        var state = before
        var changed: [[UInt8]]? = target.bulk ? nil : []
        // The documents this index hasn't seen, in id order (the back index's).
        var documents = batch.sequences.indices.filter { batch.sequences[$0] > before.sequence }
        documents.sort { batch.ids[$0].lexicographicallyPrecedes(batch.ids[$1]) }
        if !target.fresh {
            for position in documents {
                state.rowCount -= try batch.ids[position].withUnsafeBytes { id in
                    try indexes.removeRows(of: id, in: target.tables, transaction: transaction, removed: &changed)
                }
            }
        }
        var rows: [Int] = []
        try batch.bytes.withUnsafeBytes { bytes in
            func key(_ row: MappedRow) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: bytes[Int(row.keyStart)..<Int(row.valueStart)])
            }
            let appendsBack = try documents.first.map { try transaction.isAfterLastKey(target.tables.back, batch.ids[$0]) } ?? false
            for position in documents {
                let start = rows.count
                for row in batch.documentRows[position]..<batch.documentRows[position + 1] where batch.rows[row].target == index {
                    rows.append(row)
                }
                guard rows.count > start else { continue }
                try batch.ids[position].withUnsafeBytes { id in
                    try indexes.setBackIndex(of: id, to: rows[start...].lazy.map { key(batch.rows[$0]) }, in: target.tables,
                                             transaction: transaction, scratch: &scratch, append: appendsBack)
                }
            }
            rows.sort { compareBytes(key(batch.rows[$0]), key(batch.rows[$1])) < 0 }
            // Rows past the index's last key (a fresh index's first flush, keys
            // that keep growing) are appended: LMDB fills pages in order.
            let appends = try rows.first.map { try transaction.isAfterLastKey(target.tables.rows, key(batch.rows[$0])) } ?? false
            for row in rows {
                let mapped = batch.rows[row]
                try transaction.put(target.tables.rows, key(mapped),
                                    UnsafeRawBufferPointer(rebasing: bytes[Int(mapped.valueStart)..<Int(mapped.valueStart + mapped.valueLength)]),
                                    append: appends)
                changed?.append(Array(key(mapped)))
            }
        }
        state.mapErrors += batch.errors.count { $0.target == index && batch.sequences[$0.document] > before.sequence }
        state.rowCount += rows.count
        if let changed {
            try StoredReductions(rows: target.tables.rows, chunks: target.tables.chunks, reducer: target.reducer)
                .update(changed: changed, in: transaction)
        } else {
            state.chunksCurrent = false
        }
        state.sequence = max(state.sequence, batch.sequences.last!)
        try indexes.setState(state, for: target.tables.signature, in: transaction)
        return state
    }
}
