import Foundation
import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews

/// Documents as the caller's `Codable` types.
///
/// A value is stored as the JSON object its `Encodable` conformance writes
/// (dates as ISO 8601 text), with `_id` (and `_rev`, when updating) added.
/// Reading decodes the whole document, `_id` and `_rev` included, so a type
/// may declare them to keep track of its revision:
///
/// ```swift
/// struct Contact: Codable {
///     var _rev: String?
///     var name: String
///     var city: String
/// }
/// try db.put(Contact(name: "Ann", city: "Oslo"), id: "ann")
/// var ann = try db.get("ann", as: Contact.self)!
/// ann.city = "Bergen"
/// try db.put(ann, id: "ann")                    // its _rev says which revision it updates
/// ```
extension Database {
    /// Writes `value` as the document `id`.
    ///
    /// - Parameters:
    ///   - value: The document's content; it must encode as a JSON object.
    ///   - id: The document's `_id`.
    ///   - revision: The revision this write replaces; `nil` when creating the
    ///     document, or when `value` encodes its own `_rev`.
    /// - Throws: ``CodingError`` (``SetteeErrorCode/encodingFailed``) when the
    ///   value does not encode as a JSON object; ``DocumentError`` for a bad id
    ///   or a conflict.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func put(_ value: some Encodable, id: String, revision: Revision? = nil) throws -> WriteResult {
        try write(try DocumentEdit(value, id: id, revision: revision, sizeLimits: options.sizeLimits))
    }

    /// The document `id` decoded as `T`, or nil when there is none or it was deleted.
    ///
    /// - Throws: ``CodingError`` (``SetteeErrorCode/decodingFailed``) naming
    ///   the document and the member that does not fit `T`.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func get<T: Decodable>(_ id: String, as type: T.Type = T.self) throws -> T? {
        try document(id)?.decoded(as: T.self)
    }

}
