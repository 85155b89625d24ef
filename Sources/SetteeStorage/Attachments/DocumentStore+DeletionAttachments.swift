extension DocumentStore {
    /// The attachments' term of a deletion's revision id when the deletion
    /// carries `_attachments` (stubs of the attachments it had, or new ones),
    /// as CouchDB's `couch_db:new_revid/1` hashes them: the stubs are merged
    /// with the revision the deletion follows (`couch_doc:merge_stubs`), and
    /// each attachment's `{Name, Type, Md5}` goes into the term. The
    /// tombstone keeps no attachments; nil when the edit is no deletion or
    /// carries none.
    ///
    /// `current` is the revision the deletion follows, read before anything
    /// is written.
    /// - Throws: ``DocumentError`` `missing_stub` for a stub of an attachment
    ///   `current` does not have, as CouchDB refuses it.
    func deletionAttachmentsTerm(of edit: DocumentEdit, id: String, current: DocumentRecord?) throws -> [UInt8]? {
        guard edit.deleted, let attachments = edit.deletionAttachments, !attachments.isEmpty else { return nil }
        let old: [AttachmentStub] = if let current, current.hasAttachments, !current.isDeleted {
            try AttachmentStub.stubs(inBody: current.body)
        } else { [] }
        var digested: [(name: String, contentType: String, digest: [UInt8])] = []
        for attachment in attachments {
            digested.removeAll { $0.name == attachment.name }
            switch attachment.content {
            case .stub(let revpos):
                guard let kept = old.first(where: { $0.name == attachment.name }), revpos == nil || revpos == kept.revpos else {
                    throw DocumentError(.missingStub, "Invalid attachment stub in \(id) for \(attachment.name)", id: id)
                }
                digested.append((kept.name, kept.contentType, kept.digest))
            case .new(_, let digest, _):
                digested.append((attachment.name, attachment.contentType, digest))
            }
        }
        return ErlangExternalTerm.attachments(digested)
    }
}
