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
/// its new rows come, in large write transactions that commit the rows and the
/// sequence checkpoint together.
///
/// All the views being updated are mapped from one parse of each document. JS
/// work runs on the worker pool, outside any write transaction.
struct ViewIndexer {
    let store: DocumentStore
    let indexes: ViewIndexStore
    let workers: JavaScriptWorkerPool
    let logger: Logger
    /// Changed documents per batch (one write transaction each).
    var batchSize = 8192

    private static let designPrefix = Array("_design/".utf8)

    /// One index to bring up to date: the views sharing its signature.
    private struct Target {
        let view: ViewDefinition
        let tables: ViewIndexTables
        var state: ViewIndexState
    }

    /// A document of the batch, copied out of the read transaction.
    private struct ChangedDocument: Sendable {
        let sequence: UInt64
        let id: [UInt8]
        let deleted: Bool
        let isDesign: Bool
        /// The document as map functions see it (nil when deleted).
        let json: [UInt8]?
        /// With `_local_seq`, for views whose design document asks for it.
        let jsonWithSequence: [UInt8]?
    }

    /// What the map functions made of one document, per target.
    private struct MappedDocument: Sendable {
        var rows: [[EncodedRow]]
        var errors: [(target: Int, error: JavaScriptError)]
    }

    /// Updates the indexes of `views` to the database's latest sequence.
    func update(_ views: [ViewDefinition], progress: (IndexProgress) -> Void = { _ in }) throws {
        var seen = Set<String>()
        let unique = views.filter { seen.insert($0.signature).inserted }
        let latest = try store.lastSequence()
        var targets: [Target] = try unique.compactMap { view in
            let tables = try indexes.tables(for: view.signature)
            let state = try store.environment.read { try indexes.state(view.signature, in: $0) }
                ?? ViewIndexState(designDocument: view.designDocument, view: view.name)
            return state.sequence < latest ? Target(view: view, tables: tables, state: state) : nil
        }
        guard !targets.isEmpty else { return }
        let since = targets.map(\.state.sequence).min()!
        let wantsSequence = targets.contains { $0.view.localSequence }
        var cursor = since
        var processed = 0
        let total = Int(latest - since)
        logger.info("indexing", metadata: ["views": "\(targets.map(\.view.path))", "since": "\(since)", "to": "\(latest)"])
        while cursor < latest {
            let batch = try readBatch(after: cursor, upTo: latest, withSequence: wantsSequence)
            guard let last = batch.last else { break }
            let mapped = try map(batch, targets: targets)
            try write(batch, mapped, targets: &targets)
            cursor = last.sequence
            processed += batch.count
            progress(IndexProgress(processed: processed, total: total))
        }
        // Nothing changed past the last document read: the indexes are current.
        try store.environment.write { transaction in
            for index in targets.indices where targets[index].state.sequence < latest {
                targets[index].state.sequence = latest
                try indexes.setState(targets[index].state, for: targets[index].tables.signature, in: transaction)
            }
        }
    }

    private func readBatch(after since: UInt64, upTo latest: UInt64, withSequence: Bool) throws -> [ChangedDocument] {
        try store.environment.read { transaction in
            var batch: [ChangedDocument] = []
            batch.reserveCapacity(batchSize)
            try store.forEachChange(since: since, in: transaction) { sequence, idBytes, record in
                guard sequence <= latest else { return false }
                let isDesign = idBytes.starts(with: Self.designPrefix)
                var json: [UInt8]?
                var jsonWithSequence: [UInt8]?
                if !record.isDeleted {
                    let id = String(decoding: idBytes, as: UTF8.self)
                    let full = DocumentRecord.fullJSON(id: id, revision: record.revision, deleted: false, body: record.body)
                    json = full
                    if withSequence {
                        var extended = Array(full.dropLast())
                        extended.append(contentsOf: #","_local_seq":\#(sequence)}"#.utf8)
                        jsonWithSequence = extended
                    }
                }
                batch.append(ChangedDocument(sequence: sequence, id: Array(idBytes), deleted: record.isDeleted,
                                             isDesign: isDesign, json: json, jsonWithSequence: jsonWithSequence))
                return batch.count < batchSize
            }
            return batch
        }
    }

    /// Maps the batch on all workers, each taking a contiguous slice.
    private func map(_ batch: [ChangedDocument], targets: [Target]) throws -> [MappedDocument] {
        let views = targets.map(\.view)
        let sequences = targets.map(\.state.sequence)
        let workerCount = workers.workers.count
        let slice = (batch.count + workerCount - 1) / workerCount
        let parts = try workers.runOnEach { worker, context in
            let start = min(worker * slice, batch.count)
            let end = min(start + slice, batch.count)
            if start == end { return [MappedDocument]() }
            // Functions grouped by the document form they need: one parse per document and form.
            var plain: [(target: Int, function: JavaScriptFunction)] = []
            var sequenced: [(target: Int, function: JavaScriptFunction)] = []
            for (index, view) in views.enumerated() {
                let function = try context.compile(view.map, name: "\(view.designDocument)/\(view.name) map", library: view.library.map { $0.jsonText })
                if view.localSequence { sequenced.append((index, function)) } else { plain.append((index, function)) }
            }
            var output: [MappedDocument] = []
            output.reserveCapacity(end - start)
            var keyBuffer: [UInt8] = []
            for document in batch[start..<end] {
                var mapped = MappedDocument(rows: Array(repeating: [], count: views.count), errors: [])
                for (group, json) in [(plain, document.json), (sequenced, document.jsonWithSequence)] where !group.isEmpty {
                    guard let json else { continue }
                    let active = group.filter { sequences[$0.target] < document.sequence && (!document.isDesign || views[$0.target].includeDesign) }
                    if active.isEmpty { continue }
                    let result = try json.withUnsafeBytes { try context.map($0, functions: active.map(\.function)) }
                    var emitCounts = [UInt32](repeating: 0, count: active.count)
                    _ = try document.id.withUnsafeBytes { id in
                        try result.forEach(
                            rows: { function, key, value in
                                let target = active[function].target
                                keyBuffer.removeAll(keepingCapacity: true)
                                try CollationKey.append(json: key, mode: views[target].collation, to: &keyBuffer)
                                let encodedLength = keyBuffer.count
                                IndexRow.appendFullKeySuffix(id: id, emitIndex: emitCounts[function], to: &keyBuffer)
                                emitCounts[function] += 1
                                mapped.rows[target].append(EncodedRow(
                                    storedKey: IndexRow.storedKey(forFullKey: keyBuffer),
                                    value: IndexRow.value(fullKey: keyBuffer, encodedKeyLength: encodedLength, id: id, keyJSON: key, valueJSON: value)))
                            },
                            failure: { function, error in
                                mapped.errors.append((active[function].target, error))
                            })
                    }
                }
                output.append(mapped)
            }
            return output
        }
        return parts.flatMap { $0 }
    }

    private func write(_ batch: [ChangedDocument], _ mapped: [MappedDocument], targets: inout [Target]) throws {
        for (index, document) in mapped.enumerated() {
            for (target, error) in document.errors {
                let view = targets[target].view
                logger.info("map function raised an exception; the document is skipped for this view", metadata: [
                    "doc.id": "\(String(decoding: batch[index].id, as: UTF8.self))",
                    "view.ddoc": "\(view.designDocument)", "view.name": "\(view.name)",
                    "error": "\(error)",
                ])
            }
        }
        let before = targets
        do {
            try store.environment.write { transaction in
                targets = before
                var scratch: [UInt8] = []
                for target in targets.indices {
                    var state = targets[target].state
                    for (index, document) in batch.enumerated() where document.sequence > state.sequence {
                        var rows = mapped[index].rows[target]
                        rows.sort { $0.storedKey.lexicographicallyPrecedes($1.storedKey) }
                        state.rowCount += try document.id.withUnsafeBytes { id in
                            try indexes.replaceRows(of: id, with: rows[...], in: targets[target].tables, transaction: transaction, scratch: &scratch)
                        }
                        state.mapErrors += mapped[index].errors.filter { $0.target == target }.count
                    }
                    state.sequence = max(state.sequence, batch.last!.sequence)
                    targets[target].state = state
                    try indexes.setState(state, for: targets[target].tables.signature, in: transaction)
                }
            }
        } catch {
            targets = before
            throw error
        }
    }
}
