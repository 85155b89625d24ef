import SetteeCore

/// An index described in Swift, as Couchbase Lite describes them
/// (``ValueIndex``, ``ArrayIndex``): `Database.createIndex(_:name:)` creates
/// it as a CouchDB `_index` request would, named `name` in the design
/// document `_design/<name>`.
public protocol IndexConfiguration: Sendable {
    /// The `_index` request that creates this index as `name`, in the design document `_design/<name>`.
    /// - Throws: ``MangoError`` for a definition CouchDB (or, for an array index, Settee) refuses.
    func request(named name: String) throws(MangoError) -> IndexRequest
}

extension IndexConfiguration {
    /// The request body with its name and design document.
    static func request(_ index: JSONValue, type: String, name: String) throws(MangoError) -> IndexRequest {
        guard !name.isEmpty else { throw MangoError(error: "invalid_empty_string", reason: "Index name or ddoc cannot be empty string") }
        return try IndexRequest(json: .object([
            ("index", index), ("type", .string(type)), ("name", .string(name)), ("ddoc", .string(name)),
        ]))
    }
}
