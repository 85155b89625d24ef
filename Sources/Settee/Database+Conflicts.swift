import SetteeStorage

extension Database {
    /// The document's current revision, deleted or not, as
    /// `documentIncludingDeleted(_:)` reads it, with `"_conflicts"` in its
    /// body when it has live losing leaves (see ``revisions(of:)-686sp``): the
    /// document as CouchDB's changes feed shows it with `include_docs=true`
    /// and `conflicts=true`. The record is read once; a document without
    /// conflicts costs nothing more.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func documentIncludingDeletedWithConflicts(_ id: String) throws -> Document? {
        try environment.read { try store.recordWithConflicts(id, in: $0) }
    }

    /// The document with its `_conflicts` (see `documentIncludingDeletedWithConflicts(_:)`).
    public func documentIncludingDeletedWithConflicts(_ id: String) async throws -> Document? {
        try await background { try self.documentIncludingDeletedWithConflicts(id) }
    }

    /// The live document with the bytes of its attachments inline (as
    /// `document(_:attachments:since:)` reads it with `attachments`
    /// true) and `"_conflicts"` in its body when it has live losing leaves,
    /// read in one snapshot: the document as CouchDB's changes feed shows it
    /// with `include_docs=true`, `attachments=true` and `conflicts=true`.
    /// - Returns: nil when the document does not exist or was deleted.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func documentWithAttachmentsAndConflicts(_ id: String) throws -> Document? {
        try store.documentWithAttachments(id, conflicts: true)
    }

    /// The document with its attachments and `_conflicts` (see `documentWithAttachmentsAndConflicts(_:)`).
    public func documentWithAttachmentsAndConflicts(_ id: String) async throws -> Document? {
        try await background { try self.documentWithAttachmentsAndConflicts(id) }
    }
}
