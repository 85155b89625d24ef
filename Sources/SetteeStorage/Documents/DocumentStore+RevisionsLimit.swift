import SetteeCore
import Synchronization

/// CouchDB's `_revs_limit`: how many revisions back from each leaf a
/// document's history keeps, for normal edits and replicated writes alike.
/// Kept in the table `settee` under the key `revs_limit` (u32,
/// little-endian); a database that never set one has CouchDB's default, 1000.
extension DocumentStore {
    package static let revisionsLimitKey = Array("revs_limit".utf8)

    /// The database's `_revs_limit` as `transaction` sees it.
    package func revisionsLimit(in transaction: LMDBTransaction) throws -> Int {
        guard let metadata, let bytes = try transaction.get(metadata, Self.revisionsLimitKey), bytes.count == 4 else {
            return Self.defaultRevisionsLimit
        }
        return max(Int(UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self))), 1)
    }

    /// The database's `_revs_limit` as the write transaction `transaction`
    /// sees it, read from the table once per transaction: a batch that
    /// updates many documents reads it for the first, and its other updates
    /// take it from memory. Write transactions run one at a time and each
    /// has its own id (one past the last committed); an aborted one's id is
    /// taken again by the next, which sees what it saw, unless it set the
    /// limit (``setRevisionsLimit(_:)`` forgets the value kept).
    package func revisionsLimit(inWrite transaction: LMDBTransaction) throws -> Int {
        let id = transaction.id
        if let kept = writtenRevisionsLimit.withLock({ $0 }), kept.transaction == id { return kept.limit }
        let limit = try revisionsLimit(in: transaction)
        writtenRevisionsLimit.withLock { $0 = (id, limit) }
        return limit
    }

    /// Sets the database's `_revs_limit`: histories are stemmed to it as
    /// their documents are next written.
    /// - Throws: ``DocumentError`` (`bad_request`) for a limit below 1 or
    ///   above 2³¹ − 1.
    package func setRevisionsLimit(_ limit: Int) throws {
        guard limit >= 1, limit <= Int(Int32.max) else {
            throw DocumentError(.badRequest, "_revs_limit must be a positive integer (at most \(Int32.max)), not \(limit)")
        }
        try writing { transaction, _ in
            try withUnsafeBytes(of: UInt32(limit).littleEndian) { value in
                try Self.revisionsLimitKey.withUnsafeBytes { try transaction.put(try writable(metadata), $0, value) }
            }
            writtenRevisionsLimit.withLock { $0 = nil }
        }
    }
}
