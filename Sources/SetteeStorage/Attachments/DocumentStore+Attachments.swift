import CSetteeLMDB
import Foundation
public import SetteeCore

extension SetteeErrorCode {
    /// An attachment stub names an attachment the document's current
    /// revision does not have (CouchDB's `missing_stub`).
    public static let missingStub = SetteeErrorCode(rawValue: "missing_stub")
}

extension DocumentStore {
    /// The attachment tables, or the error a write to a database without them gets.
    func writableAttachmentBodies() throws -> AttachmentBodies {
        guard let attachmentBodies else {
            throw StorageError(code: EROFS, operation: "writing an attachment to \(environment.path)",
                               explanation: "the database is open read-only")
        }
        return attachmentBodies
    }

    /// Stores the attachments an edit names and drops the references of the
    /// ones its document no longer has; returns the body to store (with the
    /// `_attachments` stubs) and the attachments' term for the revision id
    /// (``ErlangExternalTerm/attachments(_:)``), or nil when the new revision has
    /// no attachments. `current` is read before anything is written (its
    /// bytes point into pages the writes may reuse). Without
    /// `releasingCurrent`, `current` only answers stubs and keeps its
    /// references (a new branch of a revision tree beside it).
    ///
    /// A deletion keeps the attachments it names on its tombstone, as
    /// CouchDB's does. A deleted `current` answers stubs only when the edit
    /// names a revision (it follows the tombstone); re-creating a deleted
    /// document without `_rev` merges no stubs (`couch_db:prep_and_validate_update`).
    func writeAttachments(of edit: DocumentEdit, id: String, current: DocumentRecord?, generation: Int,
                          releasingCurrent: Bool = true, keepingSenderRevpos: Bool = false,
                          in transaction: LMDBTransaction) throws -> (body: [UInt8], term: [UInt8])? {
        let held: [AttachmentStub] = if let current, current.hasAttachments {
            try AttachmentStub.stubs(inBody: current.body)
        } else { [] }
        let old = edit.revision == nil && current?.isDeleted == true ? [] : held
        var stubs: [AttachmentStub] = []
        var sources: [[UInt8]: (AttachmentSource, String, Int?)] = [:]
        for attachment in edit.attachments ?? [] {
            switch attachment.content {
            case .stub(let revpos):
                guard let kept = old.first(where: { $0.name == attachment.name }), revpos == nil || revpos == kept.revpos else {
                    throw DocumentError(.missingStub, "Invalid attachment stub in \(id) for \(attachment.name)", id: id)
                }
                stubs.removeAll { $0.name == attachment.name }
                stubs.append(kept)
            case .new(let source, let digest, let length, let encodedLength):
                stubs.removeAll { $0.name == attachment.name }
                let revpos = keepingSenderRevpos ? attachment.senderRevpos ?? generation : generation
                stubs.append(AttachmentStub(name: attachment.name, contentType: attachment.contentType, revpos: revpos,
                                            digest: digest, length: length))
                sources[digest] = (source, attachment.name, encodedLength)
            }
        }
        if stubs.isEmpty && (held.isEmpty || !releasingCurrent) { return nil }
        // What each digest's reference count changes by: an edit that keeps its attachments touches no body.
        var change: [[UInt8]: Int] = [:]
        for stub in stubs { change[stub.digest, default: 0] += 1 }
        for stub in held where releasingCurrent { change[stub.digest, default: 0] -= 1 }
        let bodies = try writableAttachmentBodies()
        for stub in stubs where (change[stub.digest] ?? 0) > 0 {
            try bodies.retain(stub.digest, count: UInt64(change[stub.digest]!), length: stub.length, encodedLength: sources[stub.digest]?.2,
                              source: sources[stub.digest]?.0, name: stub.name, in: transaction)
            change[stub.digest] = 0
        }
        for (digest, count) in change where count < 0 {
            try bodies.release(digest, count: UInt64(-count), in: transaction)
        }
        guard !stubs.isEmpty else { return nil }
        let body = AttachmentStub.body(edit.body, adding: stubs)
        return (body, ErlangExternalTerm.attachments(stubs.map { ($0.name, $0.contentType, $0.digest) }))
    }

    /// Drops the references a document's attachments hold (the document is
    /// being removed for good, not by an edit).
    package func releaseAttachments(of record: DocumentRecord, in transaction: LMDBTransaction) throws {
        guard record.hasAttachments else { return }
        let stubs = try AttachmentStub.stubs(inBody: record.body)
        let bodies = try writableAttachmentBodies()
        for stub in stubs { try bodies.release(stub.digest, count: 1, in: transaction) }
    }
}

// MARK: Reading

extension DocumentStore {
    /// The stub of attachment `name` of the live document `id` in `transaction`.
    /// - Throws: ``DocumentError`` `not_found` when there is no such document or attachment.
    package func attachmentStub(_ name: String, of id: String, in transaction: LMDBTransaction) throws -> AttachmentStub {
        let document = try record(id, in: transaction)
        guard let document, !document.isDeleted else { throw DocumentError(.notFound, document == nil ? "missing" : "deleted", id: id) }
        let stubs = try document.body.withUnsafeBytes { try AttachmentStub.stubs(inBody: $0) }
        guard let stub = stubs.first(where: { $0.name == name }) else {
            throw DocumentError(.notFound, "Document is missing attachment", id: id)
        }
        return stub
    }

    /// Hands the bytes of attachment `name` of document `id` to `body` a chunk
    /// at a time (each valid only during its call), in one read transaction;
    /// returns its stub (handed to `starting` first, before any chunk).
    /// Memory stays at a chunk however large it is: the pages read are given
    /// back to the kernel as the read goes.
    package func readAttachment(_ name: String, of id: String, starting: (AttachmentStub) throws -> Void = { _ in },
                                _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> AttachmentStub {
        try environment.read { transaction in
            let stub = try attachmentStub(name, of: id, in: transaction)
            try starting(stub)
            guard let bodies = attachmentBodies else { throw Self.missingBody(stub, id: id, path: environment.path) }
            var sinceRelease = 0
            let found = try bodies.forEachDecodedPiece(stub.digest, in: transaction) { chunk in
                try body(chunk)
                sinceRelease += chunk.count
                if sinceRelease >= 64 << 20 {
                    environment.releaseMappedPages()
                    sinceRelease = 0
                }
            }
            if !found { throw Self.missingBody(stub, id: id, path: environment.path) }
            if sinceRelease < stub.length { environment.releaseMappedPages() }
            return stub
        }
    }

    static func missingBody(_ stub: AttachmentStub, id: String, path: String) -> StorageError {
        .damagedRecord("document \"\(id)\"", in: path, "the document \"\(id)\": its attachment \(stub.name) (\(stub.digestText)) has no stored bytes")
    }

    /// The live document `id` with the bytes of its attachments in its
    /// `_attachments` as base64 `data` (CouchDB's `attachments=true`); with
    /// `since` (CouchDB's `atts_since`), only of those written after the
    /// newest of those revisions the document has had, the others staying stubs.
    ///
    /// Settee keeps one line of revisions per document (no conflicts), so a
    /// revision of `since` counts as one the document had when its
    /// generation is not past the current one's.
    package func documentWithAttachments(_ id: String, since: [Revision]? = nil) throws -> Document? {
        try environment.read { try documentWithAttachments(id, since: since, in: $0) }
    }

    /// The live document `id` with the bytes of its attachments and, with
    /// `conflicts`, `"_conflicts"` when it has live losing leaves, read in one
    /// snapshot (CouchDB's changes feed with `attachments=true` and `conflicts=true`).
    package func documentWithAttachments(_ id: String, conflicts: Bool) throws -> Document? {
        try environment.read { transaction in
            guard let document = try documentWithAttachments(id, in: transaction) else { return nil }
            guard conflicts else { return document }
            let body = try addingConflicts(to: String(decoding: document.body, as: UTF8.self), id: id, deleted: false, in: transaction)
            return Document(id: document.id, revision: document.revision, sequence: document.sequence, isDeleted: false, body: Array(body.utf8))
        }
    }

    /// The live document `id` with its attachments' bytes, as `transaction`
    /// sees it (see ``documentWithAttachments(_:since:)``).
    package func documentWithAttachments(_ id: String, since: [Revision]? = nil, in transaction: LMDBTransaction) throws -> Document? {
        guard let document = try record(id, in: transaction), !document.isDeleted else { return nil }
        return try withAttachmentData(document, since: since, in: transaction)
    }

    /// `document` (a revision of a document, deleted or not, read in
    /// `transaction`) with the bytes of its attachments as base64 `data`;
    /// with `since`, only of those written after the newest of those
    /// revisions it descends from (see ``documentWithAttachments(_:since:)``).
    func withAttachmentData(_ document: Document, since: [Revision]?, in transaction: LMDBTransaction) throws -> Document {
        let id = document.id
        let stubs = try document.body.withUnsafeBytes { try AttachmentStub.stubs(inBody: $0) }
        if stubs.isEmpty { return document }
        let after = since?.map(\.generation).filter { $0 <= document.revision.generation }.max().map(Int.init) ?? 0
        var body = document.body.withUnsafeBytes { AttachmentStub.bodyWithoutAttachments($0) }
        body.removeLast()
        if body.count > 1 { body.append(UInt8(ascii: ",")) }
        body.append(contentsOf: #""_attachments":{"#.utf8)
        for (index, stub) in stubs.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            guard stub.revpos > after else {
                stub.appendJSON(into: &body)
                continue
            }
            var data: [UInt8] = []
            data.reserveCapacity(stub.length)
            guard let bodies = attachmentBodies,
                  try bodies.forEachDecodedPiece(stub.digest, in: transaction, { data.append(contentsOf: $0) }) else {
                throw Self.missingBody(stub, id: id, path: environment.path)
            }
            stub.appendJSON(data: data, into: &body)
        }
        body.append(contentsOf: "}}".utf8)
        return Document(id: document.id, revision: document.revision, sequence: document.sequence, isDeleted: document.isDeleted, body: body)
    }
}

// MARK: Writing one attachment

extension DocumentEdit {
    /// An edit of document `id` to `body` (a JSON object without `_attachments`) and `attachments`.
    package init(id: String, revision: Revision?, body: [UInt8], attachments: [AttachmentEdit]) {
        self.id = id
        self.revision = revision
        self.deleted = false
        self.body = body
        self.attachments = attachments
    }
}

extension DocumentStore {
    /// Adds (or replaces) one attachment of document `id`, CouchDB's
    /// `PUT /db/doc/name?rev=…`: the document's other members and attachments
    /// stay; a document that does not exist (or was deleted) is created
    /// holding only the attachment, without a revision.
    package func putAttachment(_ attachment: AttachmentEdit, of id: String, revision: Revision?) throws -> WriteResult {
        try DocumentEdit.validate(id: id)
        try AttachmentEdit.validate(name: attachment.name, id: id)
        return try writing { transaction, countChange in
            var scratch: [UInt8] = []
            let edit = try self.edit(of: id, revision: revision, in: transaction) { stubs in
                stubs.removeAll { $0.name == attachment.name }
                stubs.append(attachment)
            }
            return try apply(edit, sequence: try lastSequence(in: transaction) + 1, in: transaction, scratch: &scratch, countChange: &countChange)
        }
    }

    /// Removes one attachment of document `id` (CouchDB's `DELETE /db/doc/name?rev=…`).
    package func removeAttachment(_ name: String, of id: String, revision: Revision) throws -> WriteResult {
        try DocumentEdit.validate(id: id)
        return try writing { transaction, countChange in
            var scratch: [UInt8] = []
            var found = false
            let edit = try self.edit(of: id, revision: revision, in: transaction) { stubs in
                found = stubs.contains { $0.name == name }
                stubs.removeAll { $0.name == name }
            }
            guard found else { throw DocumentError(.notFound, "Document is missing attachment", id: id) }
            return try apply(edit, sequence: try lastSequence(in: transaction) + 1, in: transaction, scratch: &scratch, countChange: &countChange)
        }
    }

    /// The edit that keeps document `id` as it is but for what `change` does
    /// to its attachments (given as stubs of the current ones).
    private func edit(of id: String, revision: Revision?, in transaction: LMDBTransaction,
                      _ change: (inout [AttachmentEdit]) -> Void) throws -> DocumentEdit {
        var body = DocumentEdit.emptyBody
        var attachments: [AttachmentEdit] = []
        if let current = try record(id, in: transaction), !current.isDeleted {
            // A stale or missing revision is the conflict `apply` reports.
            body = current.body.withUnsafeBytes { AttachmentStub.bodyWithoutAttachments($0) }
            attachments = try current.body.withUnsafeBytes { try AttachmentStub.stubs(inBody: $0) }.map {
                AttachmentEdit(name: $0.name, contentType: $0.contentType, content: .stub(revpos: $0.revpos))
            }
        }
        change(&attachments)
        return DocumentEdit(id: id, revision: revision, body: body, attachments: attachments)
    }
}

// MARK: Checking

extension DocumentStore {
    /// What is wrong between documents and attachment bodies: a reference
    /// count that is not the number of stubs naming the digest, a body no
    /// document refers to, a stub whose body is missing, chunks that do not
    /// add up to the length. Empty when they agree (as every commit leaves them).
    package func attachmentProblems() throws -> [String] {
        guard let bodies = attachmentBodies else { return [] }
        return try environment.read { transaction in
            var referenced: [[UInt8]: (count: UInt64, length: Int)] = [:]
            var problems: [String] = []
            try transaction.withCursor(docs) { cursor in
                var entry = try cursor.first()
                while let (key, value) = entry {
                    let record = try DocumentRecord(bytes: value, id: key, path: environment.path)
                    if record.hasRevisionTree {
                        // Each leaf holds the references; the record repeats the winner's.
                        for leaf in try revisionTree(key, record: record, in: transaction).leaves.values where leaf.hasAttachments {
                            for stub in try leaf.body.withUnsafeBytes({ try AttachmentStub.stubs(inBody: $0) }) {
                                referenced[stub.digest, default: (0, stub.length)].count += 1
                            }
                        }
                    } else if record.hasAttachments {
                        for stub in try AttachmentStub.stubs(inBody: record.body) {
                            referenced[stub.digest, default: (0, stub.length)].count += 1
                        }
                    }
                    entry = try cursor.next()
                }
            }
            // Earlier revisions kept until compaction hold references too.
            try forEachEarlierRevision(in: transaction) { record in
                guard record.hasAttachments else { return }
                for stub in try AttachmentStub.stubs(inBody: record.body) {
                    referenced[stub.digest, default: (0, stub.length)].count += 1
                }
            }
            var stored: [[UInt8]: AttachmentBodies.Entry] = [:]
            try transaction.withCursor(bodies.references) { cursor in
                var entry = try cursor.first()
                while let (key, _) = entry {
                    let digest = Array(key)
                    stored[digest] = try bodies.entry(digest, in: transaction)
                    entry = try cursor.next()
                }
            }
            for (digest, reference) in referenced {
                let text = AttachmentStub(name: "", contentType: "", revpos: 0, digest: digest, length: 0).digestText
                guard let body = stored[digest] else { problems.append("no body for \(text)"); continue }
                if body.count != reference.count { problems.append("\(text) counts \(body.count) references, documents hold \(reference.count)") }
                var length = 0
                try bodies.forEachChunk(digest, in: transaction) { length += $0.count }
                if UInt64(length) != body.length || UInt64(reference.length) != body.decodedLength ?? body.length {
                    problems.append("\(text) has \(length) bytes in chunks, \(body.length) recorded, \(reference.length) in stubs")
                }
                if body.isEncoded {
                    var decoded = 0
                    do {
                        try bodies.forEachDecodedPiece(digest, in: transaction) { decoded += $0.count }
                        if UInt64(decoded) != body.decodedLength { problems.append("\(text) inflates into \(decoded) bytes, \(body.decodedLength!) recorded") }
                    } catch {
                        problems.append("\(text) is stored gzip-encoded and does not inflate")
                    }
                }
            }
            for digest in stored.keys where referenced[digest] == nil {
                problems.append("body \(AttachmentStub(name: "", contentType: "", revpos: 0, digest: digest, length: 0).digestText) is referred to by no document")
            }
            let chunkCount = try transaction.count(bodies.chunks)
            let expectedChunks = stored.values.reduce(0) { $0 + Int(($1.length + UInt64(AttachmentBodies.chunkBytes) - 1) / UInt64(AttachmentBodies.chunkBytes)) }
            if chunkCount != expectedChunks { problems.append("\(chunkCount) chunks stored where the bodies take \(expectedChunks)") }
            return problems
        }
    }
}
