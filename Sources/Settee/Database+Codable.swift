import Foundation
import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews

/// Documents as the caller's `Codable` types.
///
/// A value is stored as the JSON object its `Encodable` conformance writes,
/// encoded as ``Options/coding`` says (dates as ISO 8601 text with
/// fractional seconds unless told otherwise), with `_id` and `_rev` added.
/// A ``DocumentModel`` carries its id and revision itself:
///
/// ```swift
/// struct Contact: DocumentModel {
///     var id: String?
///     var revision: Revision?
///     var name: String
///     var city: String
/// }
/// var ann = Contact(name: "Ann", city: "Oslo")
/// try db.save(&ann)                                   // ann.id and ann.revision are set
/// ann.city = "Bergen"
/// try db.save(&ann)                                   // a conflict if someone saved it since
/// try db.update(ann.id!, as: Contact.self) { $0.city = "Tromsø" }   // re-reads on conflict
/// try db.delete(ann.id!)
/// ```
///
/// Any other `Codable` type works too: reading decodes the whole document,
/// `_id` and `_rev` included, so a type may declare `var _id: String?` and
/// `var _rev: String?` (or `Revision?`) to keep track of them.
extension Database {
    /// Writes `value` as the document `id`.
    ///
    /// A `String` is taken as the JSON text of the document, as ``put(_:)-7va9h``
    /// takes it: `db.put(#"{"title": "raw"}"#, id: "raw")` writes the
    /// document `raw`.
    ///
    /// - Parameters:
    ///   - value: The document's content; it must encode as a JSON object.
    ///   - id: The document's `_id`.
    ///   - revision: The revision this write replaces; `nil` when creating the
    ///     document, or when `value` holds its own (a ``DocumentModel``'s
    ///     revision, or the `_rev` it encodes).
    ///   - coding: How to encode `value`; `nil` for ``Options/coding``.
    /// - Throws: ``CodingError`` (``SetteeErrorCode/encodingFailed``) when the
    ///   value does not encode as a JSON object; ``DocumentError`` for a bad id,
    ///   a value whose own id is another, or a conflict.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func put(_ value: some Encodable, id: String, revision: Revision? = nil, coding: DocumentCoding? = nil) throws -> WriteResult {
        try write(try DocumentEdit(value, id: id, revision: revision, coding: coding ?? options.coding, sizeLimits: options.sizeLimits))
    }

    /// Writes `value` as a document under its own id (a ``DocumentModel``'s
    /// id, or the `_id` it encodes), or under a generated one, as
    /// ``put(_:)-7va9h`` does for JSON without `_id`.
    ///
    /// ```swift
    /// let written = try db.put(Note(title: "Groceries"))
    /// print(written.id)   // e.g. "9f2c4e0a1b7d3c5e8f6a2b4c0d01a3"
    /// ```
    ///
    /// - Throws: As ``put(_:id:revision:coding:)``.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func put(_ value: some Encodable, coding: DocumentCoding? = nil) throws -> WriteResult {
        try write(try DocumentEdit(value, id: nil, revision: nil, coding: coding ?? options.coding, sizeLimits: options.sizeLimits))
    }

    /// Writes `document`, and sets its id (when it had none) and revision to
    /// the ones written.
    ///
    /// A document whose ``DocumentModel/revision`` is no longer the current
    /// one is a conflict (``SetteeErrorCode/conflict``), and `document` is
    /// left as it was: read it again, or use ``update(_:as:attempts:coding:_:)-5pmkq``.
    /// - Throws: As ``put(_:id:revision:coding:)``.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func save<T: DocumentModel>(_ document: inout T, coding: DocumentCoding? = nil) throws -> WriteResult {
        let result = try put(document, coding: coding)
        document.id = result.id
        document.revision = result.revision
        return result
    }

    /// Reads the document `id` as `T`, lets `change` change it, and writes it
    /// back; when another write got there first (a conflict), reads it again
    /// and runs `change` on what it holds now, up to `attempts` times.
    ///
    /// ```swift
    /// let counter = try db.update("visits", as: Counter.self) { $0.count += 1 }
    /// ```
    ///
    /// `change` may run more than once, on a fresh copy each time: it
    /// should only change the value it is given. Throwing from it stops the
    /// update, and nothing is written.
    ///
    /// - Returns: The value written (with its new revision, for a
    ///   ``DocumentModel`` or a type that decodes `_rev`).
    /// - Throws: ``DocumentError`` (``SetteeErrorCode/notFound``) when there is
    ///   no such document, or (``SetteeErrorCode/conflict``) when every
    ///   attempt met a conflict; what `change` throws; otherwise as
    ///   ``put(_:id:revision:coding:)``.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func update<T: Codable>(_ id: String, as type: T.Type = T.self, attempts: Int = 10, coding: DocumentCoding? = nil,
                                   _ change: (inout T) throws -> Void) throws -> T {
        let coding = coding ?? options.coding
        for _ in 0..<max(attempts, 1) {
            guard let current = try document(id) else { throw DocumentError(.notFound, "missing", id: id) }
            var value = try current.decoded(as: T.self, coding: coding)
            try change(&value)
            let edit = try DocumentEdit(value, id: id, revision: current.revision, coding: coding, sizeLimits: options.sizeLimits)
            do {
                let result = try write(edit)
                return try Document.decode(T.self, from: DocumentRecord.fullJSON(id: id, revision: result.revision, deleted: false, body: edit.body),
                                           id: id, revision: result.revision, coding: coding)
            } catch SetteeErrorCode.conflict {
                continue
            }
        }
        throw DocumentError(.conflict, "other writes changed the document each of the \(max(attempts, 1)) times it was updated", id: id)
    }

    /// The document `id` decoded as `T`, or nil when there is none or it was
    /// deleted. A ``DocumentModel`` gets the document's id and revision.
    ///
    /// - Parameters:
    ///   - id: The document's id.
    ///   - type: The type to decode it as.
    ///   - coding: How to decode the document; `nil` for ``Options/coding``.
    /// - Throws: ``CodingError`` (``SetteeErrorCode/decodingFailed``) naming
    ///   the document and the member that does not fit `T`.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func get<T: Decodable>(_ id: String, as type: T.Type = T.self, coding: DocumentCoding? = nil) throws -> T? {
        try document(id)?.decoded(as: T.self, coding: coding ?? options.coding)
    }

    /// Deletes the current revision of a document, whatever it is.
    ///
    /// To delete only the revision you read, and have a later one be a
    /// conflict, use ``delete(_:revision:)-6uzzs`` or delete the model.
    /// - Throws: ``DocumentError`` (``SetteeErrorCode/notFound``) when there is
    ///   no such document or it is deleted already.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func delete(_ id: String) throws -> WriteResult {
        try delete(id, revision: nil)
    }

    /// Deletes the document `document` is, at its revision: a conflict when
    /// it was changed since `document` was read or saved.
    /// - Throws: ``DocumentError``: ``SetteeErrorCode/badRequest`` for a
    ///   document without an id, ``SetteeErrorCode/conflict``,
    ///   ``SetteeErrorCode/notFound``.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func delete(_ document: some DocumentModel) throws -> WriteResult {
        try delete(try DocumentEdit.id(of: document), revision: document.revision)
    }

    // MARK: Async forms

    /// Writes `value` under its own id or a generated one (see ``put(_:coding:)``).
    ///
    /// The value is encoded where the caller runs, before the work leaves
    /// for a Settee queue, so its type need not be `Sendable`.
    @discardableResult
    public func put(_ value: some Encodable, coding: DocumentCoding? = nil,
                    isolation: isolated (any Actor)? = #isolation) async throws -> WriteResult {
        let edit = try DocumentEdit(value, id: nil, revision: nil, coding: coding ?? options.coding, sizeLimits: options.sizeLimits)
        return try await background { try self.write(edit) }
    }

    /// Writes `document` and sets its id and revision (see ``save(_:coding:)``).
    ///
    /// The document is encoded where the caller runs, so its type need not be `Sendable`.
    @discardableResult
    public func save<T: DocumentModel>(_ document: inout T, coding: DocumentCoding? = nil,
                                       isolation: isolated (any Actor)? = #isolation) async throws -> WriteResult {
        let edit = try DocumentEdit(document, id: nil, revision: nil, coding: coding ?? options.coding, sizeLimits: options.sizeLimits)
        let result = try await background { try self.write(edit) }
        document.id = result.id
        document.revision = result.revision
        return result
    }

    /// Updates the document `id`, retrying on conflict (see ``update(_:as:attempts:coding:_:)``).
    @discardableResult
    public func update<T: Codable & Sendable>(_ id: String, as type: T.Type = T.self, attempts: Int = 10, coding: DocumentCoding? = nil,
                                              _ change: @escaping @Sendable (inout T) throws -> Void) async throws -> T {
        try await background { try self.update(id, as: T.self, attempts: attempts, coding: coding, change) }
    }

    /// Deletes the current revision of a document (see ``delete(_:)-(String)``).
    @discardableResult
    public func delete(_ id: String) async throws -> WriteResult {
        try await background { try self.delete(id) }
    }

    /// Deletes the document `document` is, at its revision (see ``delete(_:)-(DocumentModel)``).
    @discardableResult
    public func delete(_ document: some DocumentModel) async throws -> WriteResult {
        let (id, revision) = (try DocumentEdit.id(of: document), document.revision)
        return try await background { try self.delete(id, revision: revision) }
    }
}
