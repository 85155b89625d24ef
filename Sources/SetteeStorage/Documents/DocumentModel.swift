/// A `Codable` type whose values are documents that know their identity:
/// the document's `_id` and `_rev` are the value's ``id`` and ``revision``.
///
/// ```swift
/// struct Note: DocumentModel {
///     var id: String?
///     var revision: Revision?
///     var title: String
///     var created = Date()
/// }
///
/// var note = Note(title: "Groceries")
/// try db.save(&note)                    // assigns an id and the revision
/// note.title = "Groceries for Sunday"
/// try db.save(&note)                    // updates the revision it holds
/// let again = try db.get(note.id!, as: Note.self)
/// try db.delete(note)
/// ```
///
/// No `CodingKeys` are needed: Settee takes ``id`` and ``revision`` from
/// the value when writing it, stores them as `_id` and `_rev`, and leaves
/// the members `id` and `revision` the type's own coding writes out of the
/// stored document; reading sets them from `_id` and `_rev` after decoding.
/// The other members are stored as the type's `Encodable` conformance
/// writes them. A value without an id is given one when written, as a
/// document without `_id` is.
public protocol DocumentModel: Codable {
    /// The document's `_id`; nil for a value never written, which is given
    /// one when it is.
    var id: String? { get set }
    /// The revision the value was read at or last saved as (the
    /// document's `_rev`); nil for a value never written. Writing the value
    /// updates that revision, and is a conflict when it is no longer the
    /// current one.
    var revision: Revision? { get set }
}
