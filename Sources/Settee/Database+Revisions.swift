import SetteeStorage

/// Revision trees, as CouchDB keeps them: replicated writes
/// (`new_edits: false`), conflicts, and the leaves and history a replicator
/// asks for.
///
/// A document written only through ``put(_:)-(String)`` and the other normal writes has
/// one leaf at a time, and keeps the ids of its earlier revisions (stemmed
/// at ``revisionsLimit()``), as CouchDB does: `_revisions`, `_revs_diff`
/// and replicated writes that continue it use them. A replicated write can give it several leaves
/// (conflicts); it then reads as the winning leaf everywhere — reads,
/// views, `find`, the changes feed — and ``revisions(of:)-686sp`` lists them all.
/// A normal write may name any leaf's `_rev`: it extends that branch;
/// deleting the losing leaves resolves the conflict.
extension Database {
    /// Writes revisions made elsewhere (CouchDB's `new_edits: false`), each a
    /// JSON object with `_id`, `_rev` and, optionally, `_revisions`; all in
    /// one transaction, each reported on its own (see
    /// ``WriteBatch/putReplicated(_:revisionsLimit:)``).
    /// - Returns: For each document, its write, nil when the revision was
    ///   already known, or the error that refused it.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func putReplicated(_ documents: [String], revisionsLimit: Int? = nil) throws -> [Result<WriteResult?, DocumentError>] {
        try write(runsBodyOnce: false) { batch in
            documents.map { json in
                do {
                    return .success(try batch.putReplicated(json, revisionsLimit: revisionsLimit))
                } catch let error as DocumentError {
                    return .failure(error)
                } catch {
                    return .failure(DocumentError(.badRequest, "\(error)"))
                }
            }
        }
    }

    /// The leaves of document `id` (the winner first, conflicts after) and
    /// the history kept for each; nil when the id was never written.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func revisions(of id: String) throws -> DocumentRevisions? {
        try environment.read { try store.revisions(of: id, in: $0) }
    }

    /// Revision `revision` of document `id`: a leaf — the winner or a
    /// conflict, deleted or not — or, while it is kept
    /// (``Options/keepsEarlierRevisions``, until ``compact()-6hje7``), an earlier
    /// revision; nil when its body is not kept (CouchDB after compaction).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func document(_ id: String, revision: Revision) throws -> Document? {
        try environment.read { try store.revision(id, revision: revision, in: $0) }
    }

    /// CouchDB's `_compact` of documents: removes the bodies of earlier
    /// revisions kept since their edits (``Options/keepsEarlierRevisions``),
    /// and the attachments only they held. Leaves, the revision ids of
    /// histories and indexes stay.
    /// - Returns: How many earlier revisions were removed.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func compact() throws -> Int {
        try store.compactEarlierRevisions()
    }

    /// Removes the bodies of earlier revisions (see `compact()`).
    @discardableResult
    public func compact() async throws -> Int {
        try await background { try self.compact() }
    }

    /// CouchDB's `_revs_diff`: for each document, the revisions named that
    /// this database does not have (only documents with some are listed).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func revisionsDifference(_ request: [(id: String, revisions: [Revision])]) throws -> [(id: String, difference: RevisionsDifference)] {
        try environment.read { try store.revisionsDifference(request, in: $0) }
    }

    /// Writes revisions made elsewhere (see `putReplicated(_:revisionsLimit:)`).
    public func putReplicated(_ documents: [String], revisionsLimit: Int? = nil) async throws -> [Result<WriteResult?, DocumentError>] {
        try await background { try self.putReplicated(documents, revisionsLimit: revisionsLimit) }
    }

    /// The leaves and history of a document (see `revisions(of:)`).
    public func revisions(of id: String) async throws -> DocumentRevisions? {
        try await background { try self.revisions(of: id) }
    }

    /// One leaf of a document (see `document(_:revision:)`).
    public func document(_ id: String, revision: Revision) async throws -> Document? {
        try await background { try self.document(id, revision: revision) }
    }

    /// The revisions this database lacks (see `revisionsDifference(_:)`).
    public func revisionsDifference(_ request: [(id: String, revisions: [Revision])]) async throws
        -> [(id: String, difference: RevisionsDifference)] {
        try await background { try self.revisionsDifference(request) }
    }
}
