import SetteeCore

/// The revision history of a document without a tree (one leaf): the ids of
/// its current revision's ancestors, as CouchDB keeps every document's
/// revision path, stemmed at the database's `_revs_limit`.
///
/// Kept in the table `revtrees` under the document's id, in place of a tree
/// (a record with ``DocumentRecord/revisionTreeFlag`` has a tree there, any
/// other record at most a path):
///
///     u32 generation of the parent (little-endian) | 16-byte hash of the parent | of the grandparent | …
///
/// When a revision id of the path is not 16 bytes (``Revision/hash``), the
/// generation has its top bit set and each hash is preceded by its length (u8).
///
/// A normal edit of the document rewrites it (one read and one write of a
/// small value); a first revision has none. Reads of documents, view
/// indexing and the changes feed never look at it: only what asks for a
/// document's revisions does (``revisionTree(_:record:in:)``). A path whose
/// first generation is not the one before the record's — a document written
/// by a Settee that kept none — is ignored: the history is then the current
/// revision alone.
extension DocumentStore {
    /// The ancestors kept for the record `record` of document `key`, newest
    /// first; empty when none are.
    package func ancestors(_ key: UnsafeRawBufferPointer, of record: DocumentRecord, in transaction: LMDBTransaction) throws -> [Revision] {
        guard !record.hasRevisionTree, record.generation > 1, let revisionTrees,
              let bytes = try transaction.get(revisionTrees, key) else { return [] }
        return Self.decodeAncestors(bytes, parentGeneration: record.generation - 1)
    }

    /// Writes the path of a document's new revision, whose parent is the
    /// record's revision `parent` (an edit of a document without a tree):
    /// `parent` followed by the parent's own ancestors, at most `limit - 1`
    /// revisions in all (the new revision is the `limit`th).
    func keepAncestors(_ key: UnsafeRawBufferPointer, parent: Revision, limit: Int, in transaction: LMDBTransaction,
                       scratch: inout [UInt8]) throws {
        let table = try writable(revisionTrees)
        let kept = max(limit, 1) - 1
        guard kept > 0 else {
            _ = try transaction.delete(table, key)
            return
        }
        var oldPath: UnsafeRawBufferPointer?
        if kept > 1, parent.generation > 1, let old = try transaction.get(table, key),
           Self.isAncestorsEntry(old, parentGeneration: parent.generation - 1) {
            oldPath = old
        }
        let oldHasTextIDs = oldPath.map { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) & Self.textIDsBit != 0 } ?? false
        guard parent.hash.count == 16, !oldHasTextIDs else {
            // A path with a text revision id: rewritten whole, in the form with lengths.
            let older = oldPath.map { Self.decodeAncestors($0, parentGeneration: parent.generation - 1) } ?? []
            try storeAncestors(([parent] + older.prefix(kept - 1))[...], key: key, in: transaction)
            return
        }
        scratch.removeAll(keepingCapacity: true)
        withUnsafeBytes(of: parent.generation.littleEndian) { scratch.append(contentsOf: $0) }
        scratch.append(contentsOf: parent.hash)
        if let old = oldPath {
            let count = min((old.count - 4) / 16, kept - 1)
            scratch.append(contentsOf: old[4..<4 + count * 16])
        }
        try scratch.withUnsafeBytes { try transaction.put(table, key, $0) }
    }

    /// Writes `ancestors` (newest first, consecutive generations) as the path
    /// of document `key`, or removes the entry when there are none.
    func storeAncestors(_ ancestors: ArraySlice<Revision>, key: UnsafeRawBufferPointer, in transaction: LMDBTransaction) throws {
        let table = try writable(revisionTrees)
        guard let parent = ancestors.first else {
            _ = try transaction.delete(table, key)
            return
        }
        let textIDs = ancestors.contains { $0.hash.count != 16 }
        guard !textIDs || parent.generation & Self.textIDsBit == 0 else {
            // A generation too high to mark: the history is then the revision alone.
            _ = try transaction.delete(table, key)
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + ancestors.count * 16)
        withUnsafeBytes(of: (textIDs ? parent.generation | Self.textIDsBit : parent.generation).littleEndian) { bytes.append(contentsOf: $0) }
        for revision in ancestors {
            if textIDs { revision.appendHashWithLength(to: &bytes) } else { bytes.append(contentsOf: revision.hash) }
        }
        try bytes.withUnsafeBytes { try transaction.put(table, key, $0) }
    }

    /// Marks a path whose hashes have lengths (a text revision id among them).
    private static let textIDsBit: UInt32 = 1 << 31

    /// Whether `bytes` is a path whose first revision is of generation `parentGeneration`.
    private static func isAncestorsEntry(_ bytes: UnsafeRawBufferPointer, parentGeneration: UInt32) -> Bool {
        guard bytes.count >= 5 else { return false }
        let first = UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self))
        if first & textIDsBit != 0 { return first & ~textIDsBit == parentGeneration }
        return bytes.count >= 20 && (bytes.count - 4) % 16 == 0 && first == parentGeneration
            && (bytes.count - 4) / 16 <= Int(parentGeneration)
    }

    private static func decodeAncestors(_ bytes: UnsafeRawBufferPointer, parentGeneration: UInt32) -> [Revision] {
        guard isAncestorsEntry(bytes, parentGeneration: parentGeneration) else { return [] }
        if UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)) & textIDsBit != 0 {
            var revisions: [Revision] = []
            var offset = 4
            while offset < bytes.count, revisions.count < Int(parentGeneration) {
                let length = Int(bytes[offset])
                guard offset + 1 + length <= bytes.count else { return [] }
                revisions.append(Revision(generation: parentGeneration - UInt32(revisions.count),
                                          hash: Array(bytes[(offset + 1)..<(offset + 1 + length)])))
                offset += 1 + length
            }
            return revisions
        }
        let count = (bytes.count - 4) / 16
        var revisions: [Revision] = []
        revisions.reserveCapacity(count)
        for index in 0..<count {
            let start = 4 + index * 16
            revisions.append(Revision(generation: parentGeneration - UInt32(index), hash: Array(bytes[start..<start + 16])))
        }
        return revisions
    }
}
