/// The writes of one `Database.write(_:)` call: they commit together, or not
/// at all.
///
/// Reads through the batch see its own writes. A batch is valid only inside
/// the closure it is passed to; do not keep it.
public final class WriteBatch {
    private let store: DocumentStore
    private let transaction: LMDBTransaction
    private var sequence: UInt64
    private var scratch: [UInt8] = []
    /// What the batch's writes change the document counts by.
    private(set) var countChange = DocumentCounts()
    private var isOpen = true
    /// The design documents written, in order (before the commit their
    /// views are counted against the index limit; after it unused indexes
    /// are removed).
    private(set) var designDocumentIDs: [String] = []
    var wroteDesignDocument: Bool { !designDocumentIDs.isEmpty }

    init(store: DocumentStore, transaction: LMDBTransaction) throws {
        self.store = store
        self.transaction = transaction
        sequence = try store.lastSequence(in: transaction)
    }

    func close() {
        isOpen = false
    }

    func apply(_ edit: DocumentEdit) throws -> WriteResult {
        precondition(isOpen, "A WriteBatch is used only inside the closure of Database.write.")
        try edit.checkDesignDocument()
        let result = try store.apply(edit, sequence: sequence + 1, in: transaction, scratch: &scratch, countChange: &countChange)
        sequence += 1
        if result.id.hasPrefix("_design/") { designDocumentIDs.append(result.id) }
        return result
    }

    /// Writes a document given as a JSON object (see `Database.put(_:)`).
    /// - Throws: ``DocumentError`` for bad input or a conflict; thrown on out
    ///   of the closure, it rolls the whole batch back.
    @discardableResult
    public func put(_ json: String) throws -> WriteResult {
        var json = json
        return try json.withUTF8 { try apply(try DocumentEdit(json: UnsafeRawBufferPointer($0), sizeLimits: store.sizeLimits)) }
    }

    /// Writes `value` as the document `id` (see `Database.put(_:id:revision:)`).
    @discardableResult
    public func put(_ value: some Encodable, id: String, revision: Revision? = nil) throws -> WriteResult {
        try apply(try DocumentEdit(value, id: id, revision: revision, sizeLimits: store.sizeLimits))
    }

    /// Deletes a document (see `Database.delete(_:revision:)`).
    @discardableResult
    public func delete(_ id: String, revision: Revision?) throws -> WriteResult {
        try DocumentEdit.validate(id: id)
        var revision = revision
        if revision == nil {
            guard let current = try store.record(id, in: transaction) else { throw DocumentError(.notFound, "missing", id: id) }
            if current.isDeleted { throw DocumentError(.notFound, "deleted", id: id) }
            revision = current.revision
        }
        return try apply(DocumentEdit(deleting: id, revision: revision))
    }

    /// The document as this batch sees it (its own writes included), or nil
    /// when there is none or it was deleted.
    public func document(_ id: String) throws -> Document? {
        precondition(isOpen, "A WriteBatch is used only inside the closure of Database.write.")
        guard let document = try store.record(id, in: transaction), !document.isDeleted else { return nil }
        return document
    }

    /// The document decoded as `T`, as this batch sees it.
    public func get<T: Decodable>(_ id: String, as type: T.Type = T.self) throws -> T? {
        try document(id)?.decoded(as: T.self)
    }
}

extension Database {
    /// Runs `body` with a batch whose writes commit in one transaction when it
    /// returns, or are all rolled back when it throws.
    ///
    /// ```swift
    /// try db.write { batch in
    ///     let ann = try batch.get("ann", as: Contact.self)!
    ///     try batch.put(ann.movingTo("Bergen"), id: "ann")
    ///     try batch.delete("old-ann", revision: nil)
    /// }
    /// ```
    ///
    /// Writes are serialised: other writers wait until the batch ends, while
    /// readers go on seeing the state before it. A conflict thrown by one of
    /// the batch's writes rolls everything back unless the closure catches it.
    /// `body` may run again when the database file has to grow mid-batch, so
    /// it should have no effects outside the batch that cannot be repeated.
    /// A batch that writes design documents whose views would take the
    /// database past the indexes it can hold is rolled back with a
    /// ``DesignDocumentError``.
    @discardableResult
    public func write<T>(_ body: (WriteBatch) throws -> T) throws -> T {
        var wroteDesignDocument = false
        let result = try store.writing { transaction, countChange in
            let batch = try WriteBatch(store: store, transaction: transaction)
            defer { batch.close() }
            let result = try body(batch)
            countChange = batch.countChange
            wroteDesignDocument = batch.wroteDesignDocument
            if wroteDesignDocument { try checkIndexLimit(written: batch.designDocumentIDs, in: transaction) }
            return result
        }
        if wroteDesignDocument { try removeUnusedIndexes() }
        return result
    }
}
