import CSetteeLMDB
public import SetteeCore
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
    /// How the batch's typed writes and reads code values unless told otherwise.
    private let coding: DocumentCoding
    /// The storage engine's `MDB_MAP_FULL`, when a write of the batch hit the
    /// end of the memory map: the transaction can then only roll back, even
    /// when the closure caught the error and went on.
    package private(set) var filledMap: StorageError?
    /// The design documents written, in order (before the commit their
    /// views are counted against the index limit; after it unused indexes
    /// are removed).
    package private(set) var designDocumentIDs: [String] = []
    package var wroteDesignDocument: Bool { !designDocumentIDs.isEmpty }

    /// Checks each edit before it is applied (a design document that could
    /// never be used is refused there).
    private let check: (DocumentEdit) throws -> Void

    package init(store: DocumentStore, transaction: LMDBTransaction, coding: DocumentCoding = .standard,
                 checking check: @escaping (DocumentEdit) throws -> Void = { _ in }) throws {
        self.store = store
        self.transaction = transaction
        self.coding = coding
        self.check = check
        sequence = try store.lastSequence(in: transaction)
    }

    package func close() {
        isOpen = false
    }

    package func apply(_ edit: DocumentEdit) throws -> WriteResult {
        precondition(isOpen, "A WriteBatch is used only inside the closure of Database.write.")
        try check(edit)
        let result: WriteResult
        do {
            result = try store.apply(edit, sequence: sequence + 1, in: transaction, scratch: &scratch, countChange: &countChange)
        } catch let error as StorageError where error.code == MDB_MAP_FULL {
            filledMap = error
            throw error
        }
        // A local document takes no sequence number (its result's is 0).
        sequence = max(sequence, result.sequence)
        if result.id.hasPrefix("_design/") { designDocumentIDs.append(result.id) }
        return result
    }

    /// The largest documents the batch's database writes.
    package var sizeLimits: DocumentSizeLimits { store.sizeLimits }

    /// Writes a replicated edit (`new_edits: false`, see ``putReplicated(_:revisionsLimit:)``);
    /// nil when its revision was already known.
    package func applyReplicated(_ edit: DocumentEdit, revisionsLimit: Int? = nil) throws -> WriteResult? {
        precondition(isOpen, "A WriteBatch is used only inside the closure of Database.write.")
        try check(edit)
        let result: WriteResult?
        do {
            result = try store.applyReplicated(edit, sequence: sequence + 1, revisionsLimit: revisionsLimit, in: transaction,
                                               scratch: &scratch, countChange: &countChange)
        } catch let error as StorageError where error.code == MDB_MAP_FULL {
            filledMap = error
            throw error
        }
        guard let result else { return nil }
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

    /// Writes `value` as the document `id` (see `Database.put(_:id:revision:coding:)`).
    @discardableResult
    public func put(_ value: some Encodable, id: String, revision: Revision? = nil, coding: DocumentCoding? = nil) throws -> WriteResult {
        try apply(try DocumentEdit(value, id: id, revision: revision, coding: coding ?? self.coding, sizeLimits: store.sizeLimits))
    }

    /// Writes `value` under its own id, or a generated one (see `Database.put(_:coding:)`).
    @discardableResult
    public func put(_ value: some Encodable, coding: DocumentCoding? = nil) throws -> WriteResult {
        try apply(try DocumentEdit(value, id: nil, revision: nil, coding: coding ?? self.coding, sizeLimits: store.sizeLimits))
    }

    /// Writes `document`, giving it an id when it has none, and sets its
    /// revision to the one written (see `Database.save(_:coding:)`).
    @discardableResult
    public func save<T: DocumentModel>(_ document: inout T, coding: DocumentCoding? = nil) throws -> WriteResult {
        let result = try put(document, coding: coding)
        document.id = result.id
        document.revision = result.revision
        return result
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

    /// Deletes the current revision of a document (see `Database.delete(_:)`).
    @discardableResult
    public func delete(_ id: String) throws -> WriteResult {
        try delete(id, revision: nil)
    }

    /// Deletes the document `document` is, at its revision (see `Database.delete(_:)`).
    @discardableResult
    public func delete(_ document: some DocumentModel) throws -> WriteResult {
        try delete(try DocumentEdit.id(of: document), revision: document.revision)
    }

    /// The document as this batch sees it (its own writes included), or nil
    /// when there is none or it was deleted.
    public func document(_ id: String) throws -> Document? {
        precondition(isOpen, "A WriteBatch is used only inside the closure of Database.write.")
        guard let document = try store.record(id, in: transaction), !document.isDeleted else { return nil }
        return document
    }

    /// The document decoded as `T`, as this batch sees it.
    public func get<T: Decodable>(_ id: String, as type: T.Type = T.self, coding: DocumentCoding? = nil) throws -> T? {
        try document(id)?.decoded(as: T.self, coding: coding ?? self.coding)
    }
}
