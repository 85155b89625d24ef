/// What checks every document write before it is stored (CouchDB's
/// `validate_doc_update`), given to the ``DocumentStore`` by whoever runs the
/// checks: the store knows nothing of the functions or the engine running them.
package protocol DocumentWriteValidation: Sendable {
    /// Called as each write transaction begins, before its first write: reads
    /// what the transaction's writes are checked against.
    func beginWrite(store: DocumentStore, in transaction: LMDBTransaction) throws
    /// Checks `edit` of document `id`; `current` is the stored revision, if any.
    /// Throws to refuse the write.
    func validate(_ edit: DocumentEdit, id: String, current: DocumentRecord?) throws
    /// Checks `edit` of document `id` against `current` as a read snapshot
    /// (`transaction`) has them, before any write transaction begins, so
    /// that slow functions do not hold the writer lock. Returns what was
    /// checked with, or nil when nothing ran that a write could skip.
    /// Throws to refuse the write.
    func validateAhead(_ edit: DocumentEdit, id: String, current: DocumentRecord?, store: DocumentStore,
                       in transaction: LMDBTransaction) throws -> ValidatedWrite?
    /// Whether the write transaction running now checks with what `validated` was checked with.
    func stillChecks(_ validated: ValidatedWrite) -> Bool
}

/// An edit checked ahead of its write transaction: which document, which
/// stored revision of it (by sequence; nil when there was none), and what
/// it was checked with. The write takes it as checked only when all three
/// still hold; otherwise the edit is checked again in the transaction.
package struct ValidatedWrite: Sendable {
    package var id: String
    package var sequence: UInt64?
    /// What the validation checked with (its functions), in its own terms.
    package var checkedWith: [String]

    package init(id: String, sequence: UInt64?, checkedWith: [String]) {
        self.id = id
        self.sequence = sequence
        self.checkedWith = checkedWith
    }
}
