import Synchronization
import SetteeStorage
import SetteeFind

/// The indexes `find` can use, as last read from the design documents, so
/// that a query does not read and sort them again while none changed.
///
/// The list is current while the last committed write transaction (LMDB's
/// counter, shared by every process on the database) is the one it was
/// confirmed at. After any write, here or in another process, the design
/// documents' ids and revisions are read again: the same ones keep the list
/// (a document write leaves it as it was); any other rebuilds it.
///
/// Each list kept has a generation, one more than the last's, so that what was
/// worked out from a list (``FindPlanCache``) is known to be for the current one.
final class FindIndexCache: Sendable {
    private struct Entry {
        /// The last committed transaction when the design documents were read, or later.
        var confirmedAt: Int
        /// The live design documents then, by id bytes, and their revisions.
        var revisions: [(id: [UInt8], revision: Revision)]
        var indexes: [MangoIndex]
        /// Counts the lists kept by this cache.
        var generation: Int
    }

    private let entry = Mutex<Entry?>(nil)

    /// The list and its generation, if nothing was committed since it was confirmed at `committed`.
    func indexes(unchangedSince committed: Int) -> (indexes: [MangoIndex], generation: Int)? {
        entry.withLock { $0.flatMap { $0.confirmedAt == committed ? ($0.indexes, $0.generation) : nil } }
    }

    /// The list for these design documents, if it is the one cached; it is
    /// then confirmed at `committed` (read before the design documents were).
    func indexes(for revisions: [(id: [UInt8], revision: Revision)], confirmingAt committed: Int) -> (indexes: [MangoIndex], generation: Int)? {
        entry.withLock { entry -> (indexes: [MangoIndex], generation: Int)? in
            guard let cached = entry, cached.revisions.elementsEqual(revisions, by: { $0.id == $1.id && $0.revision == $1.revision })
            else { return nil }
            entry?.confirmedAt = committed
            return (cached.indexes, cached.generation)
        }
    }

    /// Keeps the list read from these design documents, with `committed` the
    /// last committed transaction before they were read: its generation.
    func keep(_ indexes: [MangoIndex], for revisions: [(id: [UInt8], revision: Revision)], confirmedAt committed: Int) -> Int {
        entry.withLock { entry in
            let generation = (entry?.generation ?? 0) + 1
            entry = Entry(confirmedAt: committed, revisions: revisions, indexes: indexes, generation: generation)
            return generation
        }
    }
}
