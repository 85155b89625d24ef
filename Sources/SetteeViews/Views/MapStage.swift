import Foundation
import SetteeCore
import SetteeStorage

/// The map stage of an index update: the workers map a batch of changed
/// documents with the views' map functions (JavaScript, compiled on each
/// worker's runner, and Swift views' ``Indexer``s, called on the same threads), each worker taking the next
/// contiguous slice as it finishes one, into rows ready to store (encoded
/// keys, stored values). It knows the views and the workers, not where the
/// rows go: ``ViewIndexer`` reads the batches and writes the rows.
package struct MapStage: Sendable {
    package let views: [ViewDefinition]
    package let workers: any FunctionWorkers
    package let cpu: IndexingCPU
    private let collations: [CollationMode]
    private let includeDesign: [Bool]
    private let partitioned: [Bool]

    private static let designPrefix = Array("_design/".utf8)

    package init(views: [ViewDefinition], workers: any FunctionWorkers, cpu: IndexingCPU) {
        self.views = views
        self.workers = workers
        self.cpu = cpu
        collations = views.map(\.collation)
        includeDesign = views.map(\.includeDesign)
        partitioned = views.map(\.partitioned)
    }

    /// Views of one document form: the views they are (by position) and their compiled map functions.
    private typealias Group = (members: [(target: Int, function: CompiledFunction)], functions: [CompiledFunction])

    /// A batch of documents whose slices the workers are mapping.
    package struct Mapping {
        package let documents: DocumentBatch
        /// The slices' rows, in document order.
        package let work: SharedWork<MappedBatch>
    }

    /// Starts mapping the documents on all workers; view `i` maps only the
    /// documents changed after `sequences[i]`.
    package func start(_ documents: DocumentBatch, since sequences: [UInt64]) -> Mapping {
        // A few changes: one worker, no fan-out. Otherwise eight slices a worker.
        let slices = documents.count < 64 ? 1 : workers.count * 8
        let slice = (documents.count + slices - 1) / slices
        let work = workers.startShared(pieces: slices) { [self] piece, runner in
            let start = min(piece * slice, documents.count)
            return try cpu.measure(.mapping) { try map(documents, slice: start..<min(start + slice, documents.count), since: sequences, on: runner) }
        }
        return Mapping(documents: documents, work: work)
    }

    /// Maps one slice of the batch on a worker's runner (`context`).
    private func map(_ documents: DocumentBatch, slice: Range<Int>, since sequences: [UInt64], on context: any FunctionRunner) throws -> MappedBatch {
        var plain: [(target: Int, function: CompiledFunction)] = []
        var sequenced: [(target: Int, function: CompiledFunction)] = []
        var indexers: [(target: Int, indexer: any Indexer)] = []
        for (index, view) in views.enumerated() {
            if let swift = view.swift {
                indexers.append((index, swift.indexer))
                continue
            }
            let function = try context.compile(view.map, name: "\(view.designDocument)/\(view.name) map", library: view.library.map { $0.jsonText })
            if view.localSequence { sequenced.append((index, function)) } else { plain.append((index, function)) }
        }
        // Where a document's members are is found only for indexers that read them.
        let locatesMembers = indexers.contains { !($0.indexer is any RawJSONIndexer) }
        var output = MappedBatch()
        output.documentRows.reserveCapacity(slice.count + 1)
        output.bytes.reserveCapacity(slice.count * 128)
        output.rows.reserveCapacity(slice.count * views.count)
        var fullKey: [UInt8] = []
        var withLocalSequence: [UInt8] = []
        var emitCounts: [UInt32] = []
        var equalKeyScratch: [Int] = []
        let plainGroup: Group = (plain, plain.map(\.function))
        let sequencedGroup: Group = (sequenced, sequenced.map(\.function))
        let emitter = Emitter()
        var members: [Int32] = []
        // The views mapping a document are usually all of its form's, or the
        // same few (an index already past it leaves it out): each subset is
        // made once per slice, not per document.
        var subsets: [[UInt64: Group]] = [[:], [:]]
        func subset(of group: Group, form: Int, where maps: (Int) -> Bool) -> Group {
            guard group.members.count <= 64 else {
                let members = group.members.filter { maps($0.target) }
                return (members, members.map(\.function))
            }
            var mask: UInt64 = 0
            for (position, member) in group.members.enumerated() where maps(member.target) { mask |= 1 << position }
            if mask == 0 { return ([], []) }
            if let known = subsets[form][mask] { return known }
            let members = group.members.indices.filter { mask & 1 << $0 != 0 }.map { group.members[$0] }
            let made = (members: members, functions: members.map(\.function))
            subsets[form][mask] = made
            return made
        }
        try documents.json.withUnsafeBytes { json in
          try documents.ids.bytes.withUnsafeBytes { ids in
            /// Adds a row a map function emitted for `target` (its `emitIndex`th for the document).
            func addRow(target: Int, emitIndex: UInt32, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                        id: UnsafeRawBufferPointer) throws {
                fullKey.removeAll(keepingCapacity: true)
                // A partitioned view's rows are kept by partition, the prefix part of the encoded key.
                if partitioned[target] { PartitionKey.append(partitionOf: id, to: &fullKey) }
                try CollationKey.append(json: key, mode: collations[target], to: &fullKey)
                let encodedLength = fullKey.count
                IndexRow.appendFullKeySuffix(id: id, emitIndex: emitIndex, to: &fullKey)
                let keyStart = output.bytes.count
                IndexRow.appendStoredKey(forFullKey: fullKey, to: &output.bytes)
                let valueStart = output.bytes.count
                IndexRow.appendValue(fullKey: fullKey, encodedKeyLength: encodedLength,
                                     keyJSON: key, valueJSON: value, to: &output.bytes)
                output.rows.append(MappedRow(
                    target: Int32(target), keyStart: Int32(keyStart), keyLength: Int32(valueStart - keyStart),
                    valueLength: Int32(output.bytes.count - valueStart)))
            }
            /// Maps one document with the views of one form that map it (`active`)
            /// and adds their rows.
            func map(_ document: Int, form: Int, active: [(target: Int, function: CompiledFunction)],
                     functions: [CompiledFunction], id: UnsafeRawBufferPointer) throws {
                let text = UnsafeRawBufferPointer(rebasing: json[documents.jsonRange(document)])
                emitCounts.removeAll(keepingCapacity: true)
                emitCounts.append(contentsOf: repeatElement(0, count: active.count))
                let firstRow = output.rows.count
                defer { output.orderEqualKeysByValue(fromRow: firstRow, scratch: &equalKeyScratch) }
                func mapRows(_ text: UnsafeRawBufferPointer) throws {
                    try context.map(
                        text, functions: functions,
                        row: { function, key, value in
                            try addRow(target: active[function].target, emitIndex: emitCounts[function], key: key, value: value, id: id)
                            emitCounts[function] += 1
                        },
                        failure: { function, error in
                            // The engine's failure is the build's, not the document's: skipping
                            // the document would leave its rows out for good.
                            guard !error.kind.isEngineFailure else { throw error }
                            output.errors.append((document, active[function].target, error))
                        })
                }
                do {
                    if form == 1 {
                        withLocalSequence.removeAll(keepingCapacity: true)
                        withLocalSequence.append(contentsOf: text.dropLast())
                        withLocalSequence.append(contentsOf: #","_local_seq":\#(documents.sequences[document])}"#.utf8)
                        try withLocalSequence.withUnsafeBytes { try mapRows($0) }
                    } else {
                        try mapRows(text)
                    }
                } catch let error as JavaScriptError where !error.kind.isEngineFailure {
                    // The engine could not take this document (too large or too deep
                    // to parse within its bounds): its error, not the build's.
                    for member in active { output.errors.append((document, member.target, error)) }
                }
            }
            /// Maps one document with the views of `group` that map it: all of
            /// them (the usual case, with no subset to look up) or some.
            func map(_ document: Int, form: Int, group: Group, id: UnsafeRawBufferPointer, isDesign: Bool) throws {
                let sequence = documents.sequences[document]
                func maps(_ target: Int) -> Bool { sequences[target] < sequence && (!isDesign || includeDesign[target]) }
                if group.members.allSatisfy({ maps($0.target) }) {
                    try map(document, form: form, active: group.members, functions: group.functions, id: id)
                } else {
                    let (active, functions) = subset(of: group, form: form, where: maps)
                    if !active.isEmpty { try map(document, form: form, active: active, functions: functions, id: id) }
                }
            }
            /// Maps one document with the Swift views that map it (those whose
            /// index is behind it; design documents, never).
            func mapSwift(_ document: Int, id: UnsafeRawBufferPointer) throws {
                let sequence = documents.sequences[document]
                var indexed: IndexedDocument?
                for (target, indexer) in indexers where sequences[target] < sequence {
                    let firstRow = output.rows.count
                    defer { output.orderEqualKeysByValue(fromRow: firstRow, scratch: &equalKeyScratch) }
                    if indexed == nil {
                        // The table's room is reused: the last document's view of it is gone by now.
                        members.removeAll(keepingCapacity: true)
                        let range = documents.jsonRange(document)
                        if locatesMembers { try JSONObjectScanner.memberTable(of: UnsafeRawBufferPointer(rebasing: json[range]), into: &members) }
                        indexed = IndexedDocument(storage: documents.json, range: range, members: members,
                                                  id: String(decoding: id, as: UTF8.self), sequence: sequence)
                    }
                    emitter.reset()
                    do {
                        try indexer.map(indexed!, emitter)
                    } catch {
                        // As a JavaScript map function that throws: no rows, the error logged and counted.
                        output.errors.append((document, target, JavaScriptError(kind: .runtime, message: "\(error)")))
                        continue
                    }
                    var emitIndex: UInt32 = 0
                    try emitter.forEachRow { key, value in
                        try addRow(target: target, emitIndex: emitIndex, key: key, value: value, id: id)
                        emitIndex += 1
                    }
                }
            }
            for document in slice {
                defer { output.documentRows.append(output.rows.count) }
                guard !documents.jsonRange(document).isEmpty else { continue }
                let id = UnsafeRawBufferPointer(rebasing: ids[documents.ids.range(document)])
                let isDesign = id.starts(with: Self.designPrefix)
                // Functions grouped by the document form they need: one parse per document and form.
                if !plain.isEmpty { try map(document, form: 0, group: plainGroup, id: id, isDesign: isDesign) }
                if !sequenced.isEmpty { try map(document, form: 1, group: sequencedGroup, id: id, isDesign: isDesign) }
                if !indexers.isEmpty && !isDesign { try mapSwift(document, id: id) }
            }
          }
        }
        return output
    }
}
