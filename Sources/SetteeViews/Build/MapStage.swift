import Foundation
package import SetteeCore
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

    package init(views: [ViewDefinition], workers: any FunctionWorkers, cpu: IndexingCPU) {
        self.views = views
        self.workers = workers
        self.cpu = cpu
        collations = views.map(\.collation)
        includeDesign = views.map(\.includeDesign)
        partitioned = views.map(\.partitioned)
    }

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
        try documents.json.withUnsafeBytes { json in
            try documents.ids.bytes.withUnsafeBytes { ids in
                var mapping = try SliceMapping(views: views, collations: collations, includeDesign: includeDesign, partitioned: partitioned,
                                               documents: documents, json: json, ids: ids, since: sequences, context: context)
                try mapping.map(slice)
                return mapping.output
            }
        }
    }
}
