import CSetteeLMDB
import SetteeCore

/// The bodies of earlier revisions, kept until compaction as CouchDB keeps
/// them (``DocumentStore/keepsEarlierRevisions``): when an edit replaces a
/// leaf, the leaf's record moves to the `oldrevs` table, with the
/// references its attachments hold, so that `GET ?rev=` of an earlier
/// revision, its attachments and `include_docs` of a `{_id, _rev}` still
/// read it. ``DocumentStore/compactEarlierRevisions()`` (CouchDB's
/// `_compact`) removes them; a purge removes a document's.
///
/// Keys: the id's bytes ‖ generation (4 bytes) ‖ hash (16 bytes, or a text
/// revision id's, see ``Revision/hash``) ‖ the id's length (4), big-endian, so that one document's keys are one range and an
/// id that begins another cannot be taken for it.
extension DocumentStore {
    static func earlierRevisionKey(_ id: UnsafeRawBufferPointer, _ revision: Revision) -> [UInt8] {
        var key = Array(id)
        key.reserveCapacity(id.count + 8 + revision.hash.count)
        withUnsafeBytes(of: revision.generation.bigEndian) { key.append(contentsOf: $0) }
        key.append(contentsOf: revision.hash)
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: id.count).bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// Whether `key` is a key of document `id` in the earlier revisions.
    private static func isEarlierRevisionKey(_ key: UnsafeRawBufferPointer, of id: UnsafeRawBufferPointer) -> Bool {
        guard key.count >= id.count + 9, key.starts(with: id) else { return false }
        return key.loadUnaligned(fromByteOffset: key.count - 4, as: UInt32.self).bigEndian == UInt32(truncatingIfNeeded: id.count)
    }

    /// The document id's bytes of an earlier revision's key (empty for a key Settee did not write).
    private static func documentID(ofEarlierRevisionKey key: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer.SubSequence {
        guard key.count >= 9 else { return key.prefix(0) }
        let length = Int(key.loadUnaligned(fromByteOffset: key.count - 4, as: UInt32.self).bigEndian)
        return key.prefix(length <= key.count - 9 ? length : 0)
    }

    /// The record to keep for a leaf an edit replaces (built before the
    /// edit's writes, which may reuse the pages the leaf is read from).
    func earlierRecord(revision: Revision, sequence: UInt64, isDeleted: Bool, body: UnsafeRawBufferPointer, hasAttachments: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        DocumentRecord.encode(sequence: sequence, revision: revision, deleted: isDeleted, body: body, into: &bytes, hasAttachments: hasAttachments)
        return bytes
    }

    /// Keeps `record` (from ``earlierRecord(revision:sequence:isDeleted:body:hasAttachments:)``)
    /// as revision `revision` of document `id`.
    func keepEarlier(_ id: UnsafeRawBufferPointer, _ revision: Revision, record: [UInt8], in transaction: LMDBTransaction) throws {
        let table = try writable(earlierRevisions)
        try Self.earlierRevisionKey(id, revision).withUnsafeBytes { key in
            try record.withUnsafeBytes { try transaction.put(table, key, $0) }
        }
    }

    /// Earlier revision `revision` of document `id`, when one is kept.
    package func earlierRevision(_ id: String, revision: Revision, in transaction: LMDBTransaction) throws -> Document? {
        guard let earlierRevisions else { return nil }
        var idCopy = id
        return try idCopy.withUTF8 { idBytes in
            let key = Self.earlierRevisionKey(UnsafeRawBufferPointer(idBytes), revision)
            return try key.withUnsafeBytes { key in
                try transaction.get(earlierRevisions, key).map {
                    try DocumentRecord(bytes: $0, id: idBytes, path: environment.path).document(id: id)
                }
            }
        }
    }

    /// Removes document `id`'s earlier revisions and the attachment
    /// references they hold (the document is purged).
    func removeEarlierRevisions(_ id: UnsafeRawBufferPointer, in transaction: LMDBTransaction) throws {
        guard let earlierRevisions else { return }
        var found: [([UInt8], [AttachmentStub])] = []
        try transaction.withCursor(earlierRevisions) { cursor in
            var entry = try cursor.seek(atOrAfter: id)
            while let (key, value) = entry, key.starts(with: id) {
                if Self.isEarlierRevisionKey(key, of: id) {
                    let record = try DocumentRecord(bytes: value, id: id, path: environment.path)
                    found.append((Array(key), record.hasAttachments ? try AttachmentStub.stubs(inBody: record.body) : []))
                }
                entry = try cursor.next()
            }
        }
        try remove(found, in: transaction)
    }

    private func remove(_ entries: [([UInt8], [AttachmentStub])], in transaction: LMDBTransaction) throws {
        guard let earlierRevisions else { return }
        for (key, stubs) in entries {
            if !stubs.isEmpty {
                let bodies = try writableAttachmentBodies()
                for stub in stubs { try bodies.release(stub.digest, count: 1, in: transaction) }
            }
            _ = try transaction.delete(earlierRevisions, key)
        }
    }

    /// CouchDB's `_compact` of documents: removes every earlier revision's
    /// body, and the attachments only they held, a thousand per transaction.
    /// Returns how many were removed.
    @discardableResult
    package func compactEarlierRevisions() throws -> Int {
        guard let earlierRevisions else { return 0 }
        var removed = 0
        while true {
            let count = try writing { transaction, _ in
                var batch: [([UInt8], [AttachmentStub])] = []
                try transaction.withCursor(earlierRevisions) { cursor in
                    var entry = try cursor.first()
                    while let (key, value) = entry, batch.count < 1000 {
                        let record = try DocumentRecord(bytes: value, id: Self.documentID(ofEarlierRevisionKey: key), path: environment.path)
                        batch.append((Array(key), record.hasAttachments ? try AttachmentStub.stubs(inBody: record.body) : []))
                        entry = try cursor.next()
                    }
                }
                try remove(batch, in: transaction)
                return batch.count
            }
            removed += count
            if count < 1000 { return removed }
        }
    }

    /// Hands every kept earlier revision's record to `body` (for the
    /// attachment references `verify` counts).
    func forEachEarlierRevision(in transaction: LMDBTransaction, _ body: (DocumentRecord) throws -> Void) throws {
        guard let earlierRevisions else { return }
        try transaction.withCursor(earlierRevisions) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                try body(try DocumentRecord(bytes: value, id: Self.documentID(ofEarlierRevisionKey: key), path: environment.path))
                entry = try cursor.next()
            }
        }
    }

    /// Revision `revision` of document `id`: a leaf, or an earlier revision kept.
    package func revision(_ id: String, revision: Revision, in transaction: LMDBTransaction) throws -> Document? {
        if let leaf = try leaf(id, revision: revision, in: transaction) { return leaf }
        return try earlierRevision(id, revision: revision, in: transaction)
    }
}
