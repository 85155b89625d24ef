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
}
