import Foundation
import HTTPTypes
import Hummingbird
import Settee
import Synchronization

/// A database's `_purged_infos_limit` (and, from older Settee versions, `_revs_limit`), kept in a small
/// JSON file in its directory (`couchdb-limits.json`) so they outlast a
/// restart and go with the database when it is deleted.
///
/// `_revs_limit` is kept by the database itself (`Database.revisionsLimit()`):
/// how many revisions back from each leaf every document's history keeps.
/// Settee keeps every purge's sequence, so `_purged_infos_limit` changes nothing in
/// what it stores: it is reported back as CouchDB reports it.
struct DatabaseLimits {
    /// CouchDB's defaults: 1000 each.
    static let defaultValue = 1000
    static let fileName = "couchdb-limits.json"
    /// One writer at a time, across the databases (the file is tiny).
    private static let lock = Mutex(())

    let file: URL

    init(directory: URL) {
        file = directory.appendingPathComponent(Self.fileName)
    }

    /// The limit `key` (`revs_limit`, `purged_infos_limit`).
    func value(_ key: String) -> Int {
        Self.lock.withLock { _ in stored()[key] ?? Self.defaultValue }
    }

    /// Sets the limit `key` to `value`, written before this returns.
    func set(_ key: String, to value: Int) throws {
        try Self.lock.withLock { _ in
            var values = stored()
            values[key] = value
            try save(values)
        }
    }

    /// Moves a `_revs_limit` that older Settee versions kept in this file
    /// into `database` (`Database.setRevisionsLimit(_:)`), then drops it from
    /// the file (and the file once nothing is left in it). The database is
    /// set first, so that a move cut short is made again at the next open.
    func moveRevisionsLimit(into database: Database) throws {
        try Self.lock.withLock { _ in
            var values = stored()
            guard let limit = values.removeValue(forKey: "revs_limit") else { return }
            // A value no version could have set is dropped, not moved.
            if limit >= 1, limit <= Int(Int32.max) { try database.setRevisionsLimit(limit) }
            if values.isEmpty { try FileManager.default.removeItem(at: file) } else { try save(values) }
        }
    }

    private func save(_ values: [String: Int]) throws {
        let json = JSONValue.object(values.sorted { $0.key < $1.key }.map { ($0.key, .number(Double($0.value))) })
        try Data(json.jsonText.utf8).write(to: file, options: .atomic)
    }

    private func stored() -> [String: Int] {
        guard let data = try? Data(contentsOf: file),
              case .object(let members)? = try? JSONValue(parsing: String(decoding: data, as: UTF8.self)) else { return [:] }
        var values: [String: Int] = [:]
        for (key, value) in members {
            if case .number(let number, _) = value, let integer = Int(exactly: number) { values[key] = integer }
        }
        return values
    }
}

extension CouchAPI {
    /// `GET/PUT /{db}/_revs_limit` and `/{db}/_purged_infos_limit`.
    func databaseLimit(_ name: String, _ operation: String, _ request: inout CouchRequest) async throws -> Response {
        try allow(request, operation == "_revs_limit" ? "PUT,GET" : "GET,PUT")
        let db = try databases.database(name)
        let key = String(operation.dropFirst())
        let limits = DatabaseLimits(directory: try databases.directory(of: name))
        // `_revs_limit` is the database's own (it stems every document's history).
        let isRevisionsLimit = key == "revs_limit"
        if request.method != .put {
            let value = isRevisionsLimit ? try await db.revisionsLimit() : limits.value(key)
            return CouchResponse.json(.number(Double(value)))
        }
        guard case .number(let number, _) = try await request.jsonBody(), number > 0, number == number.rounded(),
              number <= Double(Int32.max) else {
            throw CouchError.badRequest("`\(key)` must be positive integer")
        }
        if isRevisionsLimit { try await db.setRevisionsLimit(Int(number)) } else { try limits.set(key, to: Int(number)) }
        return CouchResponse.ok()
    }
}
