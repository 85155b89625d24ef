import SetteeCore
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
    package private(set) var countChange = DocumentCounts()
    private var isOpen = true
    /// The design documents written, in order (before the commit their
    /// views are counted against the index limit; after it unused indexes
    /// are removed).
    package private(set) var designDocumentIDs: [String] = []
    package var wroteDesignDocument: Bool { !designDocumentIDs.isEmpty }

    /// Checks each edit before it is applied (a design document that could
    /// never be used is refused there).
    private let check: (DocumentEdit) throws -> Void

    package init(store: DocumentStore, transaction: LMDBTransaction, checking check: @escaping (DocumentEdit) throws -> Void = { _ in }) throws {
        self.store = store
        self.transaction = transaction
        self.check = check
        sequence = try store.lastSequence(in: transaction)
    }

    package func close() {
        isOpen = false
    }

    package func apply(_ edit: DocumentEdit) throws -> WriteResult {
        precondition(isOpen, "A WriteBatch is used only inside the closure of Database.write.")
        try check(edit)
        let result = try store.apply(edit, sequence: sequence + 1, in: transaction, scratch: &scratch, countChange: &countChange)
        // A local document takes no sequence number (its result's is 0).
        sequence = max(sequence, result.sequence)
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
