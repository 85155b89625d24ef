import Foundation
import SetteeCore
@_spi(LMDB) package import SetteeStorage

extension ViewIndexStore {
    /// Records the back-index entries of documents an index has no rows of
    /// (a new index's), as ``replaceRows(of:keys:values:in:cursor:transaction:scratch:oldKeys:)``
    /// records one document's: each of `documents` (ids in order) with its
    /// rows of `target` in `batch` (in emit order), through `cursor` on the
    /// index's back table (`append`: the ids are known to follow every id
    /// there). The entries are made one after another in one buffer, with
    /// no arrays per document; documents without rows get none.
    package func setNewBackIndexes(of documents: [Int], in batch: MappedBatch, target: Int, bytes: UnsafeRawBufferPointer,
                                   idBytes: UnsafeRawBufferPointer, cursor: LMDBCursor, append: Bool) throws {
        try forEachNewBackEntry(of: documents, in: batch, target: target, bytes: bytes, idBytes: idBytes) { id, entry in
            try cursor.put(id, entry, append: append)
        }
    }

    /// The back-index entries of `documents` (ids in order) for their rows
    /// of `target` in `batch`, each handed to `body` with its document's id
    /// (both valid during the call); documents without rows have none.
    package func forEachNewBackEntry(of documents: [Int], in batch: MappedBatch, target: Int, bytes: UnsafeRawBufferPointer,
                                     idBytes: UnsafeRawBufferPointer,
                                     _ body: (_ id: UnsafeRawBufferPointer, _ entry: UnsafeRawBufferPointer) throws -> Void) throws {
        var entries: [UInt8] = []
        entries.reserveCapacity(Self.backEntriesBuffer + 4096)
        for document in documents {
            if entries.count >= Self.backEntriesBuffer { entries.removeAll(keepingCapacity: true) }
            let start = entries.count
            for row in batch.rows(of: document) where row.target == target {
                let key = UnsafeRawBufferPointer(rebasing: bytes[Int(row.keyStart)..<Int(row.valueStart)])
                let value = UnsafeRawBufferPointer(rebasing: bytes[Int(row.valueStart)..<Int(row.valueStart + row.valueLength)])
                try IndexRow(storedKey: key, value: value).appendBackEntry(to: &entries)
            }
            guard entries.count > start else { continue }
            let id = UnsafeRawBufferPointer(rebasing: idBytes[batch.ids.range(document)])
            try entries.withUnsafeBytes { try body(id, UnsafeRawBufferPointer(rebasing: $0[start...])) }
        }
    }

    /// Bytes of back-index entries made before their buffer starts again.
    private static let backEntriesBuffer = 1 << 16
}
