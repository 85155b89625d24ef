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
final class FindIndexCache: Sendable {
    private struct Entry {
        /// The last committed transaction when the design documents were read, or later.
        var confirmedAt: Int
        /// The live design documents then, by id bytes, and their revisions.
        var revisions: [(id: [UInt8], revision: Revision)]
        var indexes: [MangoIndex]
    }

    private let entry = Mutex<Entry?>(nil)

    /// The list, if nothing was committed since it was confirmed at `committed`.
    func indexes(unchangedSince committed: Int) -> [MangoIndex]? {
        entry.withLock { $0.flatMap { $0.confirmedAt == committed ? $0.indexes : nil } }
    }

    /// The list for these design documents, if it is the one cached; it is
    /// then confirmed at `committed` (read before the design documents were).
    func indexes(for revisions: [(id: [UInt8], revision: Revision)], confirmingAt committed: Int) -> [MangoIndex]? {
        entry.withLock { entry -> [MangoIndex]? in
            guard let cached = entry, cached.revisions.elementsEqual(revisions, by: { $0.id == $1.id && $0.revision == $1.revision })
            else { return nil }
            entry?.confirmedAt = committed
            return cached.indexes
        }
    }

    /// Keeps the list read from these design documents, with `committed` the
    /// last committed transaction before they were read.
    func keep(_ indexes: [MangoIndex], for revisions: [(id: [UInt8], revision: Revision)], confirmedAt committed: Int) {
        entry.withLock { $0 = Entry(confirmedAt: committed, revisions: revisions, indexes: indexes) }
    }
}
