import SetteeStorage

/// CouchDB's `_revs_limit`: how many revisions back from each leaf a
/// document's history keeps (CouchDB's default, 1000). Every document keeps
/// the ids of its earlier revisions — written normally or replicated — and
/// drops the oldest beyond the limit as it is next written. Bodies are kept
/// for leaves only, as in CouchDB after compaction.
extension Database {
    /// The database's `_revs_limit`: 1000 unless ``setRevisionsLimit(_:)-4264j`` set another.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func revisionsLimit() throws -> Int {
        let store = try store
        return try store.environment.read { try store.revisionsLimit(in: $0) }
    }

    /// Sets the database's `_revs_limit`, kept with its files. Histories
    /// longer than the limit are stemmed as their documents are next written.
    /// - Throws: ``DocumentError`` (`bad_request`) for a limit below 1 or above 2³¹ − 1.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func setRevisionsLimit(_ limit: Int) throws {
        try store.setRevisionsLimit(limit)
    }

    /// The database's `_revs_limit`, read on a Settee queue (see `revisionsLimit()`).
    public func revisionsLimit() async throws -> Int {
        try await background { try self.revisionsLimit() }
    }

    /// Sets the database's `_revs_limit` on a Settee queue (see `setRevisionsLimit(_:)`).
    public func setRevisionsLimit(_ limit: Int) async throws {
        try await background { try self.setRevisionsLimit(limit) }
    }
}
