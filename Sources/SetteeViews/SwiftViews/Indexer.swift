import SetteeCore

/// A view written in Swift: a map function, and maybe a reduce, that index
/// documents as a JavaScript view does, registered on a database with
/// `Database.register(_:)` and queried by its ``name`` (a name without `/`:
/// views of design documents are `DDOC/VIEW`).
///
/// Its index is the same as a JavaScript view's: rows sorted by CouchDB's
/// collation, stored reductions, the same query options, live queries.
/// ``map(_:_:)`` runs on the indexing workers, several documents at once,
/// so a conforming type must be thread-safe (it is `Sendable`).
///
/// ```swift
/// struct ByType: Indexer {
///     let name = "by_type"
///     let version = "1"
///     var reduce: ReduceFunction? { .count }
///
///     func map(_ document: IndexedDocument, _ emit: Emitter) throws {
///         guard let type = document["type"]?.stringValue else { return }
///         emit([.string(type), document["year"] ?? nil], document["title"] ?? nil)
///     }
/// }
///
/// try db.register(ByType())
/// let result = try db.query("by_type", options: ViewQueryOptions(parameters: [("group_level", "1")]))
/// ```
public protocol Indexer: Sendable {
    /// The name the view is queried by: not empty, without `/`.
    var name: String { get }
    /// The version of ``map(_:_:)`` and ``reduce``: change it whenever either
    /// changes what it computes, and the view's index is built again (only
    /// this view's). Rows of an index built by another version are never mixed in.
    var version: String { get }
    /// The reduce function: a built-in (``ReduceFunction/count``, ``ReduceFunction/sum``,
    /// ``ReduceFunction/stats``, …) or Swift (``ReduceFunction/swift(_:)``), or
    /// nil (the default) for a view without one.
    var reduce: ReduceFunction? { get }

    /// Emits the rows of one document: `emit(key, value)` zero or more times.
    /// Called for every live document but design documents, on any of the
    /// indexing threads.
    ///
    /// A map that throws gives the document no rows in this view, as a
    /// JavaScript map function that throws: the error is logged and counted
    /// (``ViewInfo/mapErrors``), and indexing goes on.
    func map(_ document: IndexedDocument, _ emit: Emitter) throws
}

extension Indexer {
    /// No reduce function.
    public var reduce: ReduceFunction? { nil }
}
