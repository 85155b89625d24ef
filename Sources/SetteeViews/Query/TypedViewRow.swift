import Foundation
public import SetteeCore

/// A view row with its key, value and (with `include_docs`) document decoded
/// into Swift types: what a ``TypedView`` query and its live query yield.
///
/// A row is `Identifiable` by what makes it one in its view, so a list of
/// them keeps its rows' identities from one result of a live query to the
/// next: a map row by its document and key (and, when a document emits the
/// same key more than once, which of those rows it is), a reduce row by its
/// key. It is `Equatable`, `Hashable` and `Sendable` when its types are.
///
/// ```swift
/// List(rows) { row in Text("\(row.key): \(row.value)") }
/// ```
public struct TypedViewRow<Key: Decodable, Value: Decodable, Document: Decodable>: Identifiable {
    /// What identifies a row in its view's result.
    public struct ID: Hashable, Sendable {
        /// The emitting document's id; nil for a reduce row.
        public var documentID: String?
        /// The row's key as JSON text.
        public var keyJSON: String
        /// Which of the rows with this key and document it is, from 0: a map
        /// function may emit the same key more than once for a document.
        public var occurrence: Int
    }

    /// The row's identity (see ``ID``).
    public var id: ID
    /// The emitting document's id; nil for a reduce row.
    public var documentID: String? { id.documentID }
    /// The row's key, decoded.
    public var key: Key
    /// The row's value, decoded: the emitted value, or the reduction for a reduce row.
    public var value: Value
    /// With `include_docs`: the document, decoded; nil without it, or when
    /// the document is missing (deleted, or a linked `_id` that does not exist).
    public var document: Document?
}

extension TypedViewRow: Equatable where Key: Equatable, Value: Equatable, Document: Equatable {}
extension TypedViewRow: Hashable where Key: Hashable, Value: Hashable, Document: Hashable {}
extension TypedViewRow: Sendable where Key: Sendable, Value: Sendable, Document: Sendable {}

extension ViewResult {
    /// The rows with their keys, values and included documents decoded into
    /// the caller's types, each with its identity in the view (see ``TypedViewRow``).
    ///
    /// ```swift
    /// for row in try result.rows(key: String.self, value: Int.self) {
    ///     print(row.documentID ?? "", row.key, row.value)
    /// }
    /// ```
    /// - Parameter document: The type of the documents, with `include_docs`;
    ///   ``JSONValue`` (the default) takes any.
    /// - Throws: ``CodingError`` naming the first row that does not fit.
    public func rows<Key: Decodable, Value: Decodable, Document: Decodable>(
        key: Key.Type, value: Value.Type, document: Document.Type = JSONValue.self, coding: DocumentCoding = .standard
    ) throws -> [TypedViewRow<Key, Value, Document>] {
        var typed: [TypedViewRow<Key, Value, Document>] = []
        typed.reserveCapacity(rows.count)
        var previous: TypedViewRow<Key, Value, Document>.ID?
        for row in rows {
            var id = TypedViewRow<Key, Value, Document>.ID(documentID: row.id, keyJSON: row.keyJSON, occurrence: 0)
            // Rows of one key and document are next to each other.
            if let previous, previous.documentID == id.documentID, previous.keyJSON == id.keyJSON {
                id.occurrence = previous.occurrence + 1
            }
            previous = id
            typed.append(TypedViewRow(id: id, key: try row.key(as: Key.self, coding: coding), value: try row.value(as: Value.self, coding: coding),
                                      document: try row.document(as: Document.self, coding: coding)))
        }
        return typed
    }
}
