import Foundation
import SetteeCore
import SetteeFind

/// Indexes described in Swift, as Couchbase Lite describes them (``ValueIndex``, ``ArrayIndex``).
extension Database {
    /// Creates an index named `name`, in the design document `_design/<name>`
    /// (as `createIndex(_:)` creates it from CouchDB's `_index` request).
    ///
    /// ```swift
    /// try db.createIndex(ValueIndex("type", "year"), name: "type-year")
    /// try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
    /// ```
    /// - Throws: ``MangoError`` for a definition refused (a bad field or
    ///   path, an empty name), or when `_design/<name>` exists and is not a
    ///   `query` design document; storage and conflict errors.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func createIndex(_ configuration: some IndexConfiguration, name: String) throws -> IndexCreation {
        try createIndex(try configuration.request(named: name))
    }

    /// Deletes the index named `name`, whatever its design document (which
    /// goes with its last index).
    /// - Throws: ``MangoError`` `not_found` when no index has that name, and
    ///   `ambiguous_index` when several design documents have one (name the
    ///   design document: `deleteIndex(designDocument:name:)`).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func deleteIndex(name: String) throws {
        let named = try listIndexes().filter { $0.name == name && $0.designDocument != nil }
        guard let index = named.first else { throw MangoError(status: 404, error: "not_found", reason: "missing") }
        guard named.count == 1 else {
            let designs = named.compactMap(\.designDocument).joined(separator: ", ")
            throw MangoError(error: "ambiguous_index", reason: "Several design documents have an index named \(name): \(designs)")
        }
        try deleteIndex(designDocument: index.designDocument ?? "", name: name)
    }

    /// Creates an index named `name` on a Settee queue (see `createIndex(_:name:)`).
    @discardableResult
    public func createIndex(_ configuration: some IndexConfiguration, name: String) async throws -> IndexCreation {
        try await background { try self.createIndex(configuration, name: name) }
    }

    /// Deletes the index named `name` on a Settee queue (see `deleteIndex(name:)`).
    public func deleteIndex(name: String) async throws {
        try await background { try self.deleteIndex(name: name) }
    }
}
