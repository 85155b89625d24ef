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
        scratch.removeAll(keepingCapacity: true)
        withUnsafeBytes(of: parent.generation.littleEndian) { scratch.append(contentsOf: $0) }
        scratch.append(contentsOf: parent.hash)
        if kept > 1, parent.generation > 1, let old = try transaction.get(table, key),
           Self.isAncestorsEntry(old, parentGeneration: parent.generation - 1) {
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
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + ancestors.count * 16)
        withUnsafeBytes(of: parent.generation.littleEndian) { bytes.append(contentsOf: $0) }
        for revision in ancestors { bytes.append(contentsOf: revision.hash) }
        try bytes.withUnsafeBytes { try transaction.put(table, key, $0) }
    }

    /// Whether `bytes` is a path whose first revision is of generation `parentGeneration`.
    private static func isAncestorsEntry(_ bytes: UnsafeRawBufferPointer, parentGeneration: UInt32) -> Bool {
        bytes.count >= 20 && (bytes.count - 4) % 16 == 0
            && UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)) == parentGeneration
            && (bytes.count - 4) / 16 <= Int(parentGeneration)
    }

    private static func decodeAncestors(_ bytes: UnsafeRawBufferPointer, parentGeneration: UInt32) -> [Revision] {
        guard isAncestorsEntry(bytes, parentGeneration: parentGeneration) else { return [] }
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
