import CSetteeLMDB
import SetteeCore

/// Revision trees: conflicts, replicated writes (`new_edits: false`) and the
/// edits of a document that has more than one leaf (see ``RevisionTree``).
///
/// Attachments: each leaf holds one reference to each attachment body its
/// stubs name. The record in `docs` repeats the winning leaf and holds none
/// of its own while the document has a tree (without one, it is the leaf).
extension DocumentStore {
    /// The default of CouchDB's `_revs_limit`: how many revisions back from
    /// each leaf a tree keeps.
    package static let defaultRevisionsLimit = 1000

    // MARK: Reading

    /// The tree of the stored record `record` of document `key`: the one
    /// stored, or a tree of the record's one leaf and the ancestors kept for
    /// it (see ``ancestors(_:of:in:)``).
    package func revisionTree(_ key: UnsafeRawBufferPointer, record: DocumentRecord, in transaction: LMDBTransaction) throws -> RevisionTree {
        if record.hasRevisionTree, let revisionTrees, let bytes = try transaction.get(revisionTrees, key) {
            guard let tree = RevisionTree(encoded: bytes) else {
                let name = String(decoding: key.prefix(200), as: UTF8.self)
                throw StorageError.damagedRecord("document \"\(name)\"", in: environment.path,
                                                 "the document \"\(name)\": its revision tree is not one Settee wrote")
            }
            return tree
        }
        let leaf = RevisionTree.Leaf(isDeleted: record.isDeleted, body: Array(record.body), hasAttachments: record.hasAttachments)
        return RevisionTree(path: [record.revision] + (try ancestors(key, of: record, in: transaction)), leaf: leaf)
    }

    /// Runs `body` with the stored record of document `id` when it has a
    /// tree; nil when there is no record, or it has none.
    func withTreeRecord<T>(_ id: String, in transaction: LMDBTransaction,
                           _ body: (_ key: UnsafeRawBufferPointer, _ record: DocumentRecord) throws -> T) throws -> T? {
        var idCopy = id
        return try idCopy.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            guard let bytes = try transaction.get(docs, key) else { return nil }
            let record = try DocumentRecord(bytes: bytes, id: key, path: environment.path)
            guard record.hasRevisionTree else { return nil }
            return try body(key, record)
        }
    }

    /// The revision tree of document `id`, or nil when it was never written
    /// (or was purged).
    package func revisionTree(_ id: String, in transaction: LMDBTransaction) throws -> RevisionTree? {
        var key = id
        return try key.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            guard let bytes = try transaction.get(docs, key) else { return nil }
            return try revisionTree(key, record: DocumentRecord(bytes: bytes, id: key, path: environment.path), in: transaction)
        }
    }

    /// The leaf `revision` of document `id` (the winner or a conflict), or nil
    /// when it is not a leaf of the document.
    package func leaf(_ id: String, revision: Revision, in transaction: LMDBTransaction) throws -> Document? {
        guard let record = try storedRecord(id, in: transaction) else { return nil }
        if record.revision == revision { return record }
        guard let tree = try revisionTree(id, in: transaction), let leaf = tree.leaves[revision] else { return nil }
        return Document(id: id, revision: revision, sequence: record.sequence, isDeleted: leaf.isDeleted, body: leaf.body)
    }

    // MARK: Writing

    /// A normal edit (`new_edits: true`) of a document that has a tree: it
    /// extends the leaf its `_rev` names (the winner or a conflict; none
    /// re-creates a deleted document on its winner).
    func applyToTree(_ edit: DocumentEdit, id: String, key: UnsafeRawBufferPointer, record: DocumentRecord, sequence: UInt64,
                     in transaction: LMDBTransaction, scratch: inout [UInt8], countChange: inout DocumentCounts) throws -> WriteResult {
        var tree = try revisionTree(key, record: record, in: transaction)
        let old = (sequence: record.sequence, isDeleted: record.isDeleted)
        let parent: Revision
        if let revision = edit.revision {
            guard tree.leaves[revision] != nil else { throw DocumentError.conflict(id) }
            parent = revision
        } else {
            // As in CouchDB: without a _rev, only a deleted document is written again, on its winning leaf.
            guard record.isDeleted else { throw DocumentError.conflict(id) }
            if edit.deleted { throw DocumentError(.notFound, "deleted", id: id) }
            parent = record.revision
        }
        try Self.checkExtendable(parent, id: id)
        if let validation { try validation.validate(edit, id: id, current: record) }
        let parentLeaf = tree.leaves[parent]!
        // The leaf this edit replaces, kept (with its attachments' references) until compaction.
        let earlier = keepsEarlierRevisions ? parentLeaf.body.withUnsafeBytes {
            earlierRecord(revision: parent, sequence: record.sequence, isDeleted: parentLeaf.isDeleted, body: $0, hasAttachments: parentLeaf.hasAttachments)
        } : nil
        var attached: (body: [UInt8], term: [UInt8])?
        if edit.attachments != nil || parentLeaf.hasAttachments {
            attached = try withLeafRecord(parent, parentLeaf, key: key) { current in
                try writeAttachments(of: edit, id: id, current: current, generation: Int(parent.generation) + 1,
                                     releasingCurrent: earlier == nil, in: transaction)
            }
        }
        if let earlier { try keepEarlier(key, parent, record: earlier, in: transaction) }
        let revision = edit.revision(following: parent, attachmentsTerm: attached?.term)
        tree.extend(parent, with: revision, leaf: .init(isDeleted: edit.deleted, body: attached?.body ?? edit.body, hasAttachments: attached != nil))
        tree.prune(to: try revisionsLimit(inWrite: transaction))
        try store(tree, key: key, replacing: old, sequence: sequence, in: transaction, scratch: &scratch, countChange: &countChange)
        return WriteResult(id: id, revision: revision, sequence: sequence)
    }

    /// A replicated write (`new_edits: false`): the edit's `_rev`, with the
    /// ancestors its `_revisions` names, merges into the document's tree, as
    /// CouchDB's `couch_key_tree:merge` does. It is never refused as a
    /// conflict: a revision that branches off makes one. The record moves to
    /// the winning leaf, at sequence `sequence`. Returns nil (and writes
    /// nothing) when the revision is already known.
    package func applyReplicated(_ edit: DocumentEdit, sequence: UInt64, revisionsLimit: Int?, in transaction: LMDBTransaction,
                                 scratch: inout [UInt8], countChange: inout DocumentCounts) throws -> WriteResult? {
        guard let id = edit.id else { throw DocumentError(.badRequest, "A replicated write names its document: _id is missing") }
        guard let revision = edit.revision else {
            throw DocumentError(.badRequest, "A replicated write (new_edits: false) names the revision it writes: _rev is missing", id: id)
        }
        if id.hasPrefix(Self.localPrefix) {
            // A replicator's checkpoint: written as it comes, the last writer winning.
            return try applyLocal(edit, id: id, in: transaction, scratch: &scratch, replicated: true)
        }
        var path = edit.revisionHistory ?? [revision]
        if path.first != revision {
            guard path.isEmpty || path.first?.generation == revision.generation else {
                throw DocumentError(.badRequest, "_revisions.start (\(path.first!.generation)) is not the generation of _rev \(revision)", id: id)
            }
            // CouchDB takes _revisions over _rev; a _rev that disagrees is a client's error.
            if !path.isEmpty { throw DocumentError(.badRequest, "_rev \(revision) is not the first revision of _revisions", id: id) }
            path = [revision]
        }
        var idCopy = id
        return try idCopy.withUTF8 { idBytes in
            let key = UnsafeRawBufferPointer(idBytes)
            var tree = RevisionTree()
            var old: (sequence: UInt64, isDeleted: Bool)?
            var current: DocumentRecord?
            if let bytes = try transaction.get(docs, key) {
                let record = try DocumentRecord(bytes: bytes, id: key, path: environment.path)
                tree = try revisionTree(key, record: record, in: transaction)
                old = (record.sequence, record.isDeleted)
                current = record
            }
            if tree.contains(revision) { return nil }
            if let validation { try validation.validate(edit, id: id, current: current) }
            // The leaf the path extends, if it extends one; stubs are answered by it, else by the winner.
            let extended = path.first(where: tree.contains).flatMap { tree.leaves[$0] != nil ? $0 : nil }
            let stubSource = extended ?? tree.winner
            // The leaf this revision extends, kept (with its attachments' references) until compaction.
            var earlier: [UInt8]?
            if keepsEarlierRevisions, let extended, let leaf = tree.leaves[extended], let current {
                earlier = leaf.body.withUnsafeBytes {
                    earlierRecord(revision: extended, sequence: current.sequence, isDeleted: leaf.isDeleted, body: $0, hasAttachments: leaf.hasAttachments)
                }
            }
            var attached: (body: [UInt8], term: [UInt8])?
            if edit.attachments != nil || (extended.flatMap { tree.leaves[$0]?.hasAttachments } ?? false) {
                if let stubSource, let leaf = tree.leaves[stubSource] {
                    attached = try withLeafRecord(stubSource, leaf, key: key) { record in
                        try writeAttachments(of: edit, id: id, current: record, generation: Int(revision.generation),
                                             releasingCurrent: extended != nil && earlier == nil, keepingSenderRevpos: true, in: transaction)
                    }
                } else {
                    attached = try writeAttachments(of: edit, id: id, current: nil, generation: Int(revision.generation),
                                                    keepingSenderRevpos: true, in: transaction)
                }
            }
            if let earlier, let extended { try keepEarlier(key, extended, record: earlier, in: transaction) }
            _ = tree.merge(path: path, leaf: .init(isDeleted: edit.deleted, body: attached?.body ?? edit.body, hasAttachments: attached != nil))
            tree.prune(to: try revisionsLimit ?? self.revisionsLimit(inWrite: transaction))
            try store(tree, key: key, replacing: old, sequence: sequence, in: transaction, scratch: &scratch, countChange: &countChange)
            return WriteResult(id: id, revision: revision, sequence: sequence)
        }
    }

    /// Writes replicated edits in one transaction (see
    /// ``applyReplicated(_:sequence:revisionsLimit:in:scratch:countChange:)``);
    /// each is reported on its own.
    package func writeReplicated(_ edits: [DocumentEdit], revisionsLimit: Int? = nil) throws -> [Result<WriteResult?, DocumentError>] {
        try writing { transaction, countChange in
            var sequence = try lastSequence(in: transaction)
            var scratch: [UInt8] = []
            return try edits.map { edit -> Result<WriteResult?, DocumentError> in
                do {
                    let result = try applyReplicated(edit, sequence: sequence + 1, revisionsLimit: revisionsLimit, in: transaction,
                                                     scratch: &scratch, countChange: &countChange)
                    if let result { sequence = result.sequence }
                    return .success(result)
                } catch let error as DocumentError {
                    return .failure(error)
                }
            }
        }
    }

    /// Purges the leaves `revisions` of document `id` when it has a tree and
    /// they are not all its leaves; nil otherwise (the caller purges the
    /// whole document, or nothing).
    func purgeLeaves(_ revisions: [Revision], of id: String, sequence: UInt64, in transaction: LMDBTransaction,
                     countChange: inout DocumentCounts) throws -> [Revision]? {
        try withTreeRecord(id, in: transaction) { key, record in
            try purgeLeaves(revisions, key: key, record: record, sequence: sequence, in: transaction, countChange: &countChange)
        } ?? nil
    }

    /// Removes the leaves `revisions` of a document that has a tree, as
    /// CouchDB's purge of some of a document's revisions: the record moves
    /// to the new winner at sequence `sequence`. Returns the leaves removed;
    /// removes nothing, and returns nil, when they are all the leaves (the
    /// whole document is purged instead).
    package func purgeLeaves(_ revisions: [Revision], key: UnsafeRawBufferPointer, record: DocumentRecord, sequence: UInt64,
                             in transaction: LMDBTransaction, countChange: inout DocumentCounts) throws -> [Revision]? {
        var tree = try revisionTree(key, record: record, in: transaction)
        let removed = tree.sortedLeaves.filter(revisions.contains)
        if removed.count == tree.leaves.count { return nil }
        if removed.isEmpty { return [] }
        let old = (sequence: record.sequence, isDeleted: record.isDeleted)
        for revision in removed {
            if let leaf = tree.leaves[revision], leaf.hasAttachments {
                try withLeafRecord(revision, leaf, key: key) { try releaseAttachments(of: $0, in: transaction) }
            }
            tree.removeLeaf(revision)
        }
        // The document's earlier revisions go with a purge, as a compaction would take them.
        try removeEarlierRevisions(key, in: transaction)
        var scratch: [UInt8] = []
        try store(tree, key: key, replacing: old, sequence: sequence, in: transaction, scratch: &scratch, countChange: &countChange)
        return removed
    }

    /// Releases the attachments of every leaf of a document that has a tree,
    /// and removes the tree (the document is purged whole).
    func removeRevisionTree(_ key: UnsafeRawBufferPointer, record: DocumentRecord, in transaction: LMDBTransaction) throws {
        guard let revisionTrees else { return }
        if record.hasRevisionTree {
            let tree = try revisionTree(key, record: record, in: transaction)
            for (revision, leaf) in tree.leaves where leaf.hasAttachments {
                try withLeafRecord(revision, leaf, key: key) { try releaseAttachments(of: $0, in: transaction) }
            }
        }
        _ = try transaction.delete(revisionTrees, key)
    }

    /// Writes the tree and its winner's record at `sequence`, moving the
    /// document's entry in the changes feed there.
    private func store(_ tree: RevisionTree, key: UnsafeRawBufferPointer, replacing old: (sequence: UInt64, isDeleted: Bool)?,
                       sequence: UInt64, in transaction: LMDBTransaction, scratch: inout [UInt8],
                       countChange: inout DocumentCounts) throws {
        guard let winner = tree.winner, let leaf = tree.leaves[winner] else { return }
        // One leaf: the record is the leaf, and the tree its path (the ancestors kept).
        let path = tree.leaves.count == 1 ? tree.history(of: winner) : []
        let keepsTree = tree.leaves.count > 1 || path.count != tree.parents.count
            || zip(path, path.dropFirst()).contains { $0.generation != $1.generation + 1 }
        leaf.body.withUnsafeBytes {
            DocumentRecord.encode(sequence: sequence, revision: winner, deleted: leaf.isDeleted, body: $0, into: &scratch,
                                  hasAttachments: leaf.hasAttachments, hasRevisionTree: keepsTree)
        }
        try scratch.withUnsafeBytes { try transaction.put(docs, key, $0) }
        let trees = try writable(revisionTrees)
        if keepsTree {
            try tree.encoded.withUnsafeBytes { try transaction.put(trees, key, $0) }
        } else {
            try storeAncestors(path.dropFirst(), key: key, in: transaction)
        }
        if let old {
            try withUnsafeBytes(of: old.sequence.bigEndian) { _ = try transaction.delete(seqs, $0) }
        }
        try withUnsafeBytes(of: sequence.bigEndian) { try transaction.put(seqs, $0, key, append: true) }
        countChange.countWrite(wasDeleted: old?.isDeleted, isDeleted: leaf.isDeleted)
    }

    /// Runs `body` with a ``DocumentRecord`` of the leaf (for the attachment code, which reads records).
    private func withLeafRecord<T>(_ revision: Revision, _ leaf: RevisionTree.Leaf, key: UnsafeRawBufferPointer,
                                   _ body: (DocumentRecord) throws -> T) throws -> T {
        var bytes: [UInt8] = []
        leaf.body.withUnsafeBytes {
            DocumentRecord.encode(sequence: 0, revision: revision, deleted: leaf.isDeleted, body: $0, into: &bytes,
                                  hasAttachments: leaf.hasAttachments)
        }
        return try bytes.withUnsafeBytes { try body(try DocumentRecord(bytes: $0, id: key, path: environment.path)) }
    }
}
