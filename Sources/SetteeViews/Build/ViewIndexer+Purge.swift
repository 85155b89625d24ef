import SetteeCore
import SetteeStorage

extension ViewIndexer {
    /// Removes from one index the rows of the documents purged after purge
    /// sequence `since` (up to `purgeSequence`), found through its back
    /// index, adding their stored keys to `removed`; the state's row count
    /// and purge sequence follow. A document purged and written again since
    /// loses its rows too: the update that follows maps it afresh from the
    /// changes feed, where its new write is after the index's sequence.
    func removeRows(purgedAfter since: UInt64, upTo purgeSequence: UInt64, from tables: ViewIndexTables,
                    state: inout ViewIndexState, in transaction: LMDBTransaction, removed: inout [[UInt8]]?) throws {
        var rowCount = state.rowCount
        var oldKeys = PackedByteStrings()
        try store.forEachPurge(since: since, in: transaction) { sequence, id in
            guard sequence <= purgeSequence else { return }
            rowCount -= try indexes.removeBackEntry(of: id, in: tables, transaction: transaction, oldKeys: &oldKeys)
        }
        try indexes.deleteRows(oldKeys, from: tables, transaction: transaction, removed: &removed)
        state.rowCount = rowCount
        state.purgeSequence = purgeSequence
    }
}
