import SetteeCore

/// A rule in Swift that every write of a document passes, whatever path it
/// takes into the database: `put`, batches, replicated (`new_edits: false`)
/// writes, attachment edits, deletions — as CouchDB's `before_doc_update`
/// hooks do for `_users` and `_replicator`.
///
/// Give one in ``Database/Options/writeRule``. It runs inside the write,
/// before the database's `validate_doc_update` functions, for every document
/// but design documents (which only database administrators write) and
/// `_local` documents (which have no revisions to protect). Throwing refuses
/// that one write: a ``DocumentError`` with `.forbidden` or `.unauthorized`
/// (or any error the caller understands) reaches the writer as it is.
///
/// ```swift
/// struct NoSecrets: DocumentWriteRule {
///     func check(_ document: JSONValue, old: JSONValue?, writer: Database.ValidationContext?) throws {
///         if document["secret"] != nil { throw DocumentError(.forbidden, "no secrets here") }
///     }
/// }
/// ```
///
/// The rule must be quick and must not write to the database: it runs while
/// the database's write lock is held.
public protocol DocumentWriteRule: Sendable {
    /// Checks `document`, as it would be stored (with `_id`, the `_rev` it
    /// replaces, `_deleted` for a deletion, attachments as stubs), against
    /// `old`, the current revision it replaces (nil for a new document).
    /// `writer` is the ``Database/validationContext`` of the write, nil for
    /// a write the program makes on its own behalf.
    func check(_ document: JSONValue, old: JSONValue?, writer: Database.ValidationContext?) throws
}
