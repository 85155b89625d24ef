import CSetteeLMDB
package import Foundation
import SetteeCore

// The attachments of one leaf of a document, deleted or not: a tombstone
// written with `_attachments` keeps them, as CouchDB's does, and a losing
// leaf has its own. CouchDB serves them when the revision is named
// (`GET /db/doc?rev=…&attachments=true`, `GET /db/doc/att?rev=…`, `open_revs`),
// and so are an earlier revision's, while it is kept (``DocumentStore/keepsEarlierRevisions``).

extension DocumentStore {
    /// The stub of attachment `name` of leaf `revision` of document `id` —
    /// the winner or a conflict, deleted or not — with that revision.
    /// - Throws: ``DocumentError`` `not_found`: "missing" when `revision` is
    ///   not a leaf of the document, "Document is missing attachment" when
    ///   the leaf has no attachment `name`.
    package func attachmentStub(_ name: String, of id: String, revision: Revision) throws -> (stub: AttachmentStub, revision: Revision) {
        try environment.read { (try leafAttachmentStub(name, of: id, revision: revision, in: $0), revision) }
    }

    /// Attachment `name` of leaf `revision` of document `id`, deleted or not,
    /// its bytes read into memory in the same snapshot.
    /// - Throws: ``DocumentError`` `not_found` as ``attachmentStub(_:of:revision:)``.
    package func attachmentBytes(_ name: String, of id: String, revision: Revision) throws -> (stub: AttachmentStub, data: Data) {
        try environment.read { transaction in
            let stub = try leafAttachmentStub(name, of: id, revision: revision, in: transaction)
            var data = Data(capacity: stub.length)
            guard let bodies = attachmentBodies, try bodies.forEachDecodedPiece(stub.digest, in: transaction, { data.append(contentsOf: $0) }) else {
                throw Self.missingBody(stub, id: id, path: environment.path)
            }
            return (stub, data)
        }
    }

    private func leafAttachmentStub(_ name: String, of id: String, revision: Revision, in transaction: LMDBTransaction) throws -> AttachmentStub {
        guard let leaf = try self.revision(id, revision: revision, in: transaction) else {
            throw DocumentError(.notFound, "missing", id: id)
        }
        let stubs = try leaf.body.withUnsafeBytes { try AttachmentStub.stubs(inBody: $0) }
        guard let stub = stubs.first(where: { $0.name == name }) else {
            throw DocumentError(.notFound, "Document is missing attachment", id: id)
        }
        return stub
    }

    /// Leaf `revision` of document `id` (or, without one, its current
    /// revision), deleted or not, with the bytes of its attachments as
    /// base64 `data`, read in one snapshot; with `since` (CouchDB's
    /// `atts_since`), only of those written after the newest of those
    /// revisions. Nil when there is no such leaf.
    package func leafWithAttachments(_ id: String, revision: Revision?, since: [Revision]? = nil) throws -> Document? {
        try environment.read { transaction in
            let document = if let revision { try self.revision(id, revision: revision, in: transaction) } else { try record(id, in: transaction) }
            guard let document else { return nil }
            return try withAttachmentData(document, since: since, in: transaction)
        }
    }
}
