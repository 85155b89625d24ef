import Foundation
import SetteeCore
import SetteeStorage
import SetteeViews

/// A view of a database (`DDOC/VIEW`) whose rows are read as Swift types:
/// its keys as `Key`, its values as `Value` and, with `include_docs`, its
/// documents as `Document`. Made by ``Database/view(_:key:value:document:)``.
///
/// ```swift
/// let byTag = db.view("notes/by_tag", key: String.self, value: Int.self)
/// let swift = try await byTag.query(ViewQueryOptions(key: tag, reduce: false))   // [TypedViewRow<String, Int, JSONValue>]
/// let counts = try await byTag.query(ViewQueryOptions(group: true))            // one row per tag, its count
/// let total = try await byTag.reduce()                                       // Int?
/// for try await rows in byTag.liveQuery() { show(rows) }
/// ```
///
/// `Value` is what the rows the options ask for hold: the emitted values
/// of a map view (or of a reduce view queried with `reduce: false`), the
/// reductions otherwise. A view whose map and reduce values differ in type
/// is read through two handles.
public struct TypedView<Key: Decodable, Value: Decodable, Document: Decodable>: Sendable {
    /// The database the view is in.
    public let database: Database
    /// The view, as `DDOC/VIEW`.
    public let path: String

    /// The rows the options select, decoded.
    /// - Throws: As `Database.query(_:options:progress:)`, and
    ///   ``CodingError`` naming the first row that does not fit the types.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func query(_ options: ViewQueryOptions = ViewQueryOptions(),
                      progress: (IndexProgress) -> Void = { _ in }) throws -> [TypedViewRow<Key, Value, Document>] {
        try database.query(path, options: options, progress: progress).rows(key: Key.self, value: Value.self, document: Document.self, coding: database.options.coding)
    }

    /// The rows the options select, decoded; the query runs on a Settee
    /// queue (see `Database.query(_:options:progress:)` for
    /// cancellation), the rows are decoded in the calling task.
    public func query(_ options: ViewQueryOptions = ViewQueryOptions(),
                      progress: @escaping @Sendable (IndexProgress) -> Void = { _ in }) async throws -> [TypedViewRow<Key, Value, Document>] {
        try await database.query(path, options: options, progress: progress).rows(key: Key.self, value: Value.self, document: Document.self, coding: database.options.coding)
    }

    /// The view's reduction of the rows the options select (with no
    /// grouping: one value), or nil when they select none. The options'
    /// `reduce`, `group` and `groupLevel` are set for it. For grouped
    /// reductions, `query(_:progress:)` with `group` or `groupLevel`.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func reduce(_ options: ViewQueryOptions = ViewQueryOptions()) throws -> Value? {
        try database.query(path, options: Self.reducing(options)).rows.first?.value(as: Value.self, coding: database.options.coding)
    }

    /// The view's reduction of the rows the options select, or nil when they
    /// select none (see `reduce(_:)`).
    public func reduce(_ options: ViewQueryOptions = ViewQueryOptions()) async throws -> Value? {
        try await database.query(path, options: Self.reducing(options)).rows.first?.value(as: Value.self, coding: database.options.coding)
    }

    /// The options with every selected row reduced to one (its key is
    /// `null`, so it is not decoded as `Key`).
    private static func reducing(_ options: ViewQueryOptions) -> ViewQueryOptions {
        var options = options
        (options.reduce, options.group, options.groupLevel) = (true, nil, nil)
        return options
    }

    /// The rows the options select now, then again whenever a write changes
    /// them: ``LiveQuery``'s results, decoded.
    public func liveQuery(_ options: ViewQueryOptions = ViewQueryOptions()) -> TypedLiveQuery<Key, Value, Document> {
        TypedLiveQuery(query: database.liveQuery(path, options: options), coding: database.options.coding)
    }
}

extension Database {
    /// The view `DDOC/VIEW` with its rows read as Swift types (see ``TypedView``).
    ///
    /// - Parameters:
    ///   - path: The view, as `DDOC/VIEW`. Nothing is read until it is queried.
    ///   - key: The type of its keys.
    ///   - value: The type of its values (or reductions).
    ///   - document: The type of its documents with `include_docs`; ``JSONValue`` by default.
    public func view<Key: Decodable, Value: Decodable, Document: Decodable>(
        _ path: String, key: Key.Type, value: Value.Type, document: Document.Type = JSONValue.self
    ) -> TypedView<Key, Value, Document> {
        TypedView(database: self, path: path)
    }
}
