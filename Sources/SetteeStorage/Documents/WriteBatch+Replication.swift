extension WriteBatch {
    /// Writes a revision made elsewhere, as CouchDB's `new_edits: false`
    /// (what a replicator writes): `json` has `_id`, the `_rev` to store,
    /// and, optionally, `_revisions` (`{"start": N, "ids": [...]}`), the
    /// revision's ancestors, newest first.
    ///
    /// The revision is merged into the document's revision tree and never
    /// refused as a conflict: when it does not extend a leaf, the document
    /// gets a conflict (see `Database.revisions(of:)`). The document then
    /// reads as the winning leaf, as CouchDB picks it.
    /// - Parameter revisionsLimit: How many revisions back from each leaf the
    ///   tree keeps (CouchDB's `_revs_limit`); nil for the database's own
    ///   (see `Database.revisionsLimit()`).
    /// - Returns: The write, or nil when the revision was already known
    ///   (nothing is written).
    /// - Throws: ``DocumentError`` for a document without `_id` or `_rev`, or
    ///   a malformed `_revisions`.
    @discardableResult
    public func putReplicated(_ json: String, revisionsLimit: Int? = nil) throws -> WriteResult? {
        var json = json
        return try json.withUTF8 { try applyReplicated(try DocumentEdit(json: UnsafeRawBufferPointer($0), sizeLimits: sizeLimits), revisionsLimit: revisionsLimit) }
    }
}
