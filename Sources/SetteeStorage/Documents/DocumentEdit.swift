import SetteeCore
/// An incoming document, validated as CouchDB validates it, before it is written.
package struct DocumentEdit: Sendable {
    /// `_id`, or nil when the store must generate one.
    package var id: String?
    /// `_rev` as given, or nil.
    package var revision: Revision?
    /// Whether the edit deletes the document (`"_deleted": true`).
    package var deleted: Bool
    /// The other members, as a JSON object: a deletion's too, and each of
    /// an object's keys once, as CouchDB keeps them (``JSONDuplicateKeys``).
    package var body: [UInt8]
    /// The revision id's hash when the edit follows the revision it names
    /// (or creates the document) with no attachments, the common case: made
    /// with the edit, so that imports hash their documents in parallel and the
    /// writer only checks that the case holds (``revision(following:attachmentsTerm:)``).
    private var expectedHash: (after: Revision?, deleted: Bool, hash: [UInt8])?
    /// The `_attachments` member (new bytes and stubs), or nil when the
    /// document has none: `body` never holds it. A deletion's too: its
    /// tombstone keeps them, as CouchDB's does.
    package var attachments: [AttachmentEdit]?
    /// `_revisions` as given (`{"start": N, "ids": [...]}`): the revision and
    /// its ancestors, newest first. Only a replicated write uses it.
    package var revisionHistory: [Revision]?

    /// The longest id the storage engine can key (LMDB's 511-byte key limit).
    package static let maximumIDBytes = 511

    /// Validates one JSON document. Errors say what is wrong in CouchDB's words.
    /// A document's size is the byte length of its JSON as given, checked
    /// before anything else is done with it (a design document's once its id is read).
    package init(json: UnsafeRawBufferPointer, sizeLimits: DocumentSizeLimits = DocumentSizeLimits()) throws(DocumentError) {
        if json.count > sizeLimits.largest {
            throw sizeLimits.tooLarge(bytes: json.count, id: nil, limit: sizeLimits.largest)
        }
        let members: [JSONObjectMember]
        do {
            members = try JSONObjectScanner.scan(json)
        } catch {
            switch error {
            case .notAnObject: throw DocumentError(.badRequest, "Document must be a JSON object")
            case .malformed(let error): throw DocumentError(.badRequest, "invalid JSON: \(error)")
            }
        }
        var id: String?
        var revision: Revision?
        var deleted = false
        var attachments: [AttachmentEdit]?
        var revisionHistory: [Revision]?
        var revisions: UnsafeRawBufferPointer?
        var body: [UInt8] = [UInt8(ascii: "{")]
        body.reserveCapacity(json.count)
        for member in members {
            let value = UnsafeRawBufferPointer(rebasing: json[member.valueRange])
            if member.key.utf8.first == UInt8(ascii: "_") {
                switch member.key {
                case "_id":
                    id = try Self.validID(value)
                    continue
                case "_rev":
                    guard case .string(let text)? = try? JSONParser.parse(value), let parsed = Revision(text) else {
                        throw DocumentError(.badRequest, "Invalid rev format", id: id)
                    }
                    revision = parsed
                    continue
                case "_deleted":
                    guard case .bool(let flag)? = try? JSONParser.parse(value) else {
                        throw DocumentError(.badRequest, "_deleted must be a boolean", id: id)
                    }
                    deleted = flag
                    continue
                case "_attachments":
                    attachments = try AttachmentEdit.parse(value, id: id)
                    continue
                case "_revisions":
                    // Read once the id is known: a local document's is ignored, as CouchDB ignores it.
                    revisions = value
                    continue
                case "_conflicts", "_deleted_conflicts", "_revs_info", "_local_seq":
                    // What a read with those options adds, ignored on the way back in, as CouchDB does.
                    continue
                case "_replication_state", "_replication_state_time", "_replication_state_reason", "_replication_id", "_replication_stats":
                    // What a replication scheduler records in a replication document: kept in the body, as CouchDB's `transfer_fields`.
                    break
                default:
                    throw DocumentError(.documentValidation, "Bad special document member: \(member.key)", id: id)
                }
            }
            if body.count > 1 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: json[member.keyRange.lowerBound..<member.keyRange.upperBound])
            body.append(UInt8(ascii: ":"))
            body.append(contentsOf: value)
        }
        body.append(UInt8(ascii: "}"))
        if let revisions, !(id?.hasPrefix(DocumentStore.localPrefix) ?? false) {
            revisionHistory = try Self.revisionHistory(revisions, id: id)
        }
        if let id, json.count > sizeLimits.limit(forID: id) {
            throw sizeLimits.tooLarge(bytes: json.count, id: id, limit: sizeLimits.limit(forID: id))
        }
        self.id = id
        self.revision = revision
        self.deleted = deleted
        self.attachments = attachments
        self.revisionHistory = revisionHistory
        if let hash = RevisionHash.ofUniqueKeys(deleted: deleted, previous: revision, body: body, attachmentsTerm: nil) {
            self.body = body
            expectedHash = (revision, deleted, hash)
        } else {
            self.body = JSONDuplicateKeys.removed(from: body)
            expectedHash = (revision, deleted, RevisionHash.of(deleted: deleted, previous: revision, body: self.body))
        }
    }

    /// The revision that follows `previous` for this edit, its attachments'
    /// term being `attachmentsTerm`: CouchDB's `new_revid` (``Revision/next(after:deleted:bodyTerm:attachmentsTerm:)``),
    /// taken from the hash made with the edit when it was made for that case.
    package func revision(following previous: Revision?, attachmentsTerm: [UInt8]?) -> Revision {
        if attachmentsTerm == nil, let expected = expectedHash, expected.after == previous, expected.deleted == deleted {
            return Revision(generation: (previous?.generation ?? 0) + 1, hash: expected.hash)
        }
        return Revision.next(after: previous, deleted: deleted, body: body, attachmentsTerm: attachmentsTerm)
    }

    /// A deletion (`DELETE /db/doc`): its tombstone keeps no members and no attachments.
    package init(deleting id: String, revision: Revision?) {
        self.id = id
        self.revision = revision
        self.deleted = true
        self.body = Self.emptyBody
    }

    package static let emptyBody: [UInt8] = Array("{}".utf8)

    /// CouchDB's rules for `_id` (couch_doc:validate_docid), plus the key-size limit.
    package static func validID(_ value: UnsafeRawBufferPointer) throws(DocumentError) -> String {
        guard case .string(let id)? = try? JSONParser.parse(value) else {
            throw DocumentError(.badRequest, "Document id must be a string")
        }
        try validate(id: id)
        return id
    }

    package static func validate(id: String) throws(DocumentError) {
        if id.isEmpty {
            throw DocumentError(.badRequest, "Document id must not be empty")
        }
        if id.utf8.count > maximumIDBytes {
            throw DocumentError(.badRequest, "Document id must not be longer than \(maximumIDBytes) bytes", id: String(id.prefix(40)) + "…")
        }
        if id.utf8.first == UInt8(ascii: "_") {
            if id.hasPrefix("_design/") {
                if id.utf8.count == "_design/".utf8.count {
                    throw DocumentError(.badRequest, "Illegal document id `_design/`", id: id)
                }
            } else if id.hasPrefix(DocumentStore.localPrefix) {
                if id.utf8.count == DocumentStore.localPrefix.utf8.count {
                    throw DocumentError(.badRequest, "Illegal document id `_local/`", id: id)
                }
            } else {
                throw DocumentError(.badRequest, "Only reserved document ids may start with underscore.", id: id)
            }
        }
    }
}

/// The largest documents a database writes, in bytes of their JSON
/// (see ``Database/Options/maximumDocumentBytes``).
package struct DocumentSizeLimits: Sendable {
    /// For documents other than design documents (CouchDB's `max_document_size`).
    package var document = 8_000_000
    /// For `_design/` documents.
    package var designDocument = 2_000_000

    package init(document: Int = 8_000_000, designDocument: Int = 2_000_000) {
        self.document = document
        self.designDocument = designDocument
    }

    /// The larger limit: what a document whose id is not yet known may take.
    package var largest: Int { max(document, designDocument) }

    package func limit(forID id: String) -> Int {
        id.hasPrefix("_design/") ? designDocument : document
    }

    /// The error for a document of `bytes` over `limit` (at least `bytes`
    /// when it was refused before its end was read).
    package func tooLarge(bytes: Int, id: String?, limit: Int, atLeast: Bool = false) -> DocumentError {
        let kind = id?.hasPrefix("_design/") == true ? "design document" : "document"
        let option = limit == designDocument && limit != document ? "maximumDesignDocumentBytes" : "maximumDocumentBytes"
        return DocumentError(.documentTooLarge, "the \(kind) is \(atLeast ? "more than " : "")\(bytes) bytes of JSON, over the limit of \(limit) bytes (Database.Options.\(option))", id: id)
    }
}
