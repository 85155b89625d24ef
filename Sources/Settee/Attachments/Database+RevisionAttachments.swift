import Foundation
import SetteeCore
import SetteeStorage

// The attachments of a named revision — a conflict, or a tombstone written
// with `_attachments`, which keeps them as CouchDB's does.

extension Database {
    /// Leaf `revision` of document `id` — the winner or a conflict, deleted
    /// or not — with the bytes of its attachments inline as base64 `data`
    /// (CouchDB's `GET /db/doc?rev=…&attachments=true`). A deletion written
    /// with `_attachments` stubs keeps those attachments on its tombstone.
    ///
    /// - Parameters:
    ///   - id: The document's id.
    ///   - revision: The leaf to read.
    ///   - attachments: Whether to include the bytes; `false` gives the stubs.
    ///   - since: CouchDB's `atts_since`: attachments stored at or before the
    ///     newest of these revisions stay stubs.
    /// - Returns: nil when `revision` is not a leaf of the document.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func document(_ id: String, revision: Revision, attachments: Bool, since: [Revision]? = nil) throws -> Document? {
        attachments ? try store.leafWithAttachments(id, revision: revision, since: since) : try document(id, revision: revision)
    }

    /// Leaf `revision` of a document with its attachments' bytes (see
    /// `document(_:revision:attachments:since:)`).
    public func document(_ id: String, revision: Revision, attachments: Bool, since: [Revision]? = nil) async throws -> Document? {
        try await background { try self.document(id, revision: revision, attachments: attachments, since: since) }
    }

    /// The current revision of document `id`, deleted or not, with the bytes
    /// of its attachments inline (a tombstone keeps those its deletion named).
    package func documentIncludingDeleted(_ id: String, attachments since: [Revision]?) async throws -> Document? {
        try await background { try self.store.leafWithAttachments(id, revision: nil, since: since) }
    }

    /// Attachment `name` of leaf `revision` of document `id` — deleted or
    /// not — its bytes read into memory (CouchDB's `GET /db/doc/name?rev=…`).
    ///
    /// - Returns: nil when `revision` is not a leaf of the document or has no
    ///   attachment of that name.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func attachment(_ name: String, of id: String, revision: Revision) throws -> Blob? {
        do {
            let (stub, data) = try store.attachmentBytes(name, of: id, revision: revision)
            return Blob(stub: stub, data: data)
        } catch let error as DocumentError where error.code == .notFound {
            return nil
        }
    }

    /// Attachment `name` of leaf `revision` of a document (see `attachment(_:of:revision:)`).
    public func attachment(_ name: String, of id: String, revision: Revision) async throws -> Blob? {
        try await background { try self.attachment(name, of: id, revision: revision) }
    }

    /// Attachment `name` of leaf `revision` of document `id`, deleted or not,
    /// without its bytes (read with ``attachmentChunk(of:number:)``).
    /// - Throws: ``DocumentError`` `not_found` ("missing" for a revision
    ///   that is not a leaf, "Document is missing attachment").
    package func storedAttachment(_ name: String, of id: String, revision: Revision) async throws -> StoredAttachment {
        try await background {
            let (stub, revision) = try self.store.attachmentStub(name, of: id, revision: revision)
            return try self.stored(stub, revision: revision)
        }
    }
}
