import SetteeCore

/// What a purge removed, as CouchDB's `_purge` answers:
/// `{"purge_seq": …, "purged": {docid: [revs]}}`.
public struct PurgeResult: Sendable, Equatable {
    /// The database's purge sequence after the purge: how many documents
    /// have been purged from it, ever.
    public var purgeSequence: UInt64
    /// For each id asked for, the revisions purged (none when the document
    /// was missing or its current revision was not among those named).
    public var purged: [String: [Revision]]

    public init(purgeSequence: UInt64, purged: [String: [Revision]]) {
        self.purgeSequence = purgeSequence
        self.purged = purged
    }
}

/// Purging, as CouchDB's `_purge`: a document's record and its entry in the
/// changes feed go, and the counts with them, as if it had never been
/// written. Each purged document's id is logged in the table `purges` under
/// the purge sequence (big-endian u64 → id), so that every view index,
/// which keeps the purge sequence it has caught up with, removes that
/// document's rows on its next update.
///
/// A purge also moves the update sequence on (as in CouchDB): it writes an
/// entry with an empty id to the changes feed at the next sequence number.
/// The feed's readers skip such entries; they keep the sequence from going
/// back when the latest document is purged (the sequence is the feed's last
/// key), and they make indexes see that they are behind.
extension DocumentStore {
    /// The number of documents ever purged (0 for none).
    package func purgeSequence(in transaction: LMDBTransaction) throws -> UInt64 {
        guard let purges else { return 0 }
        return try transaction.withCursor(purges) { cursor in
            guard let last = try cursor.last() else { return 0 }
            return try Self.purgeSequence(fromKey: last.key, path: environment.path)
        }
    }

    private static func purgeSequence(fromKey key: UnsafeRawBufferPointer, path: String) throws(StorageError) -> UInt64 {
        guard key.count == 8 else {
            throw StorageError.damagedRecord("the purge log", in: path, "a key of the purge log is \(key.count) bytes where a purge sequence takes 8")
        }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// Visits the ids purged after purge sequence `since`, in order.
    package func forEachPurge(since: UInt64, in transaction: LMDBTransaction,
                              _ body: (_ purgeSequence: UInt64, _ id: UnsafeRawBufferPointer) throws -> Void) throws {
        guard let purges else { return }
        try transaction.withCursor(purges) { cursor in
            var entry = try withUnsafeBytes(of: (since + 1).bigEndian) { try cursor.seek(atOrAfter: $0) }
            while let (key, id) = entry {
                try body(try Self.purgeSequence(fromKey: key, path: environment.path), id)
                entry = try cursor.next()
            }
        }
    }

    /// Purges documents in one write transaction. `requests` maps each id
    /// to the revisions to purge, nil (or empty) for whatever is current.
    /// A missing document, or one whose current revision is not named, is
    /// left alone (CouchDB ignores revisions that are not leaves).
    /// With `onlyExpired`, a document is purged only while its expiration
    /// time has passed (checked in the purge's transaction: it may have been
    /// written anew since the expired ones were listed).
    package func purge(_ requests: [(id: String, revisions: [Revision]?)], onlyExpired: Bool = false) throws -> PurgeResult {
        try writing { transaction, countChange in
            var purgeSequence = try purgeSequence(in: transaction)
            // Taken before any entry goes: purging the latest document must not take the sequence back.
            let latest = try lastSequence(in: transaction)
            var purged: [String: [Revision]] = [:]
            // Purging some leaves of a document with a tree moves it to the next sequence.
            var sequence = latest
            var purgedWhole = false
            for (id, revisions) in requests {
                try DocumentEdit.validate(id: id)
                if id.hasPrefix(Self.localPrefix) {
                    throw DocumentError(.badRequest, "Local documents (`_local/`) are not purged; delete them instead", id: id)
                }
                purged[id] = purged[id] ?? []
                if let revisions, !revisions.isEmpty, !onlyExpired,
                   let removed = try purgeLeaves(revisions, of: id, sequence: sequence + 1, in: transaction, countChange: &countChange) {
                    if !removed.isEmpty { sequence += 1 }
                    purged[id] = removed
                    continue
                }
                // Read past expiration (``record(_:in:)`` hides expired documents): expired ones are purged too.
                guard let record = try storedRecord(id, in: transaction) else { continue }
                if let revisions, !revisions.isEmpty, !revisions.contains(record.revision) { continue }
                if onlyExpired, try !Array(id.utf8).withUnsafeBytes({ try isExpired($0, in: transaction) }) { continue }
                try Array(id.utf8).withUnsafeBytes { key in
                    try removePurged(key, sequence: record.sequence, isDeleted: record.isDeleted, purgeSequence: purgeSequence + 1,
                                     in: transaction, countChange: &countChange)
                }
                purgeSequence += 1
                purgedWhole = true
                purged[id] = [record.revision]
            }
            if purgedWhole {
                try withUnsafeBytes(of: (sequence + 1).bigEndian) { try transaction.put(seqs, $0, [UInt8](), append: true) }
            }
            return PurgeResult(purgeSequence: purgeSequence, purged: purged)
        }
    }

    /// Removes a document's record, its entry in the changes feed and its
    /// expiration, releases its attachments (a body no other document uses
    /// goes), takes it from the counts, and logs its id at `purgeSequence`.
    private func removePurged(_ key: UnsafeRawBufferPointer, sequence: UInt64, isDeleted: Bool, purgeSequence: UInt64,
                              in transaction: LMDBTransaction, countChange: inout DocumentCounts) throws {
        if let stored = try transaction.get(docs, key) {
            // Released before the delete: the record points into the page the delete rewrites.
            let record = try DocumentRecord(bytes: stored, id: key, path: environment.path)
            if record.hasRevisionTree {
                try removeRevisionTree(key, record: record, in: transaction)
            } else {
                try releaseAttachments(of: record, in: transaction)
                if let revisionTrees { _ = try transaction.delete(revisionTrees, key) }
            }
        }
        _ = try transaction.delete(docs, key)
        try removeEarlierRevisions(key, in: transaction)
        _ = try withUnsafeBytes(of: sequence.bigEndian) { try transaction.delete(seqs, $0) }
        if isDeleted { countChange.deleted -= 1 } else { countChange.live -= 1 }
        try removeExpiration(of: String(decoding: key, as: UTF8.self), in: transaction)
        try withUnsafeBytes(of: purgeSequence.bigEndian) { try transaction.put(try writable(purges), $0, key, append: true) }
    }

    /// Purges the stored document `key` (at `sequence`), whose expiration
    /// time has passed, within a write that goes on to write it anew: that
    /// write's sequence number moves the update sequence on.
    func purgeExpired(_ key: UnsafeRawBufferPointer, sequence: UInt64, isDeleted: Bool, in transaction: LMDBTransaction,
                      countChange: inout DocumentCounts) throws {
        try removePurged(key, sequence: sequence, isDeleted: isDeleted, purgeSequence: try purgeSequence(in: transaction) + 1,
                         in: transaction, countChange: &countChange)
    }
}
