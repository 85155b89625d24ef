public import Foundation
import SetteeCore
public import SetteeStorage

extension Database {
    /// Attachment `name` of document `id`, its bytes read into memory.
    ///
    /// - Returns: nil when the document does not exist, was deleted, or has
    ///   no attachment of that name.
    /// - Note: For large attachments, ``readAttachment(_:of:_:)-70a10`` and
    ///   ``writeAttachment(_:of:to:)-8i1oh`` hand the bytes on a chunk at a time.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func attachment(_ name: String, of id: String) throws -> Blob? {
        var data = Data()
        do {
            let stub = try store.readAttachment(name, of: id, starting: { data.reserveCapacity($0.length) }) { chunk in
                data.append(contentsOf: chunk)
            }
            return Blob(stub: stub, data: data)
        } catch let error as DocumentError where error.code == .notFound {
            return nil
        }
    }

    /// Hands the bytes of attachment `name` of document `id` to `body` a chunk
    /// (up to 1 MiB) at a time, in order, from one snapshot; memory stays at a
    /// chunk however large the attachment. Each chunk is valid only during its call.
    ///
    /// - Returns: The attachment's content type, length, digest and revpos
    ///   (a ``Blob/Content-swift.enum/stored`` blob).
    /// - Throws: ``DocumentError`` `not_found` when the document is missing,
    ///   deleted, or has no such attachment ("Document is missing attachment").
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func readAttachment(_ name: String, of id: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Blob {
        Blob(stub: try store.readAttachment(name, of: id, body), data: nil)
    }

    /// Writes the bytes of attachment `name` of document `id` to the file at
    /// `url` (created or replaced), a chunk at a time.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func writeAttachment(_ name: String, of id: String, to url: URL) throws -> Blob {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: url.path])
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        return try readAttachment(name, of: id) { chunk in
            try handle.write(contentsOf: chunk)
        }
    }

    /// Adds attachment `name` to document `id`, or replaces the one of that
    /// name, as CouchDB's `PUT /db/doc/name?rev=…`: the document's other
    /// members and attachments stay, and it gets a new revision.
    ///
    /// A file blob is read twice, a chunk at a time (once for its digest
    /// before the write, once while it is stored), so attachments of hundreds
    /// of megabytes are stored without being held in memory. Bytes already
    /// stored for any document are not stored again.
    ///
    /// - Parameters:
    ///   - blob: The bytes (in memory or a file) and their content type.
    ///   - name: The attachment's name.
    ///   - id: The document's id.
    ///   - revision: The document's current revision; nil for a document
    ///     that does not exist yet (it is created holding only the attachment).
    /// - Throws: ``DocumentError`` `conflict` for a stale or missing revision.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func putAttachment(_ blob: Blob, named name: String, of id: String, revision: Revision?) throws -> WriteResult {
        let attachment: AttachmentEdit
        switch blob.content {
        case .data(let data):
            attachment = AttachmentEdit(name: name, contentType: blob.contentType, bytes: data)
        case .file(let url):
            attachment = try AttachmentEdit(name: name, contentType: blob.contentType, file: url)
        case .stored:
            throw DocumentError(.badRequest, "attachment \(name): a stored blob (a stub) holds no bytes to put; read them with attachment(_:of:) first", id: id)
        }
        return try store.putAttachment(attachment, of: id, revision: revision)
    }

    /// Removes attachment `name` from document `id` (CouchDB's
    /// `DELETE /db/doc/name?rev=…`); its bytes go when no document refers to them.
    ///
    /// - Throws: ``DocumentError`` `conflict` for a stale revision,
    ///   `not_found` when the document has no such attachment.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func removeAttachment(_ name: String, of id: String, revision: Revision) throws -> WriteResult {
        try store.removeAttachment(name, of: id, revision: revision)
    }

    /// The document with the bytes of its attachments inline, as base64
    /// `data` in its `_attachments` (CouchDB's `attachments=true`).
    ///
    /// - Parameters:
    ///   - id: The document's id.
    ///   - attachments: Whether to include the bytes; `false` gives the document with stubs.
    ///   - since: CouchDB's `atts_since`: revisions the reader
    ///     already has; attachments stored at or before the newest of them
    ///     stay stubs. Settee keeps one line of revisions per document, so any
    ///     of them whose generation is not past the current revision's counts.
    /// - Returns: nil when the document does not exist or was deleted.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func document(_ id: String, attachments: Bool, since: [Revision]? = nil) throws -> Document? {
        attachments ? try store.documentWithAttachments(id, since: since) : try store.document(id)
    }
}
