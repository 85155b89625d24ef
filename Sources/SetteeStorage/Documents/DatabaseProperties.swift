package import SetteeCore

/// A database's properties, CouchDB's `props` (`GET /db` answers them):
/// set when the database is created, kept as a JSON object under the key
/// `props` in the table `settee`, beside the format record. A database
/// without the record has none (`{}`); an older Settee leaves the record alone.
package enum DatabaseProperties {
    package static let key = Array("props".utf8)

    /// The properties as stored: `{}` when none were set.
    package static func read(_ store: DocumentStore, in transaction: LMDBTransaction) throws -> JSONValue {
        guard let metadata = store.metadata, let bytes = try transaction.get(metadata, key),
              case .object(let members)? = try? JSONParser.parse(bytes) else { return .object([]) }
        return .object(members)
    }

    /// Whether the properties make the database partitioned (`{"partitioned": true}`).
    package static func isPartitioned(_ store: DocumentStore, in transaction: LMDBTransaction) throws -> Bool {
        try read(store, in: transaction)["partitioned"] == .bool(true)
    }

    /// Stores `properties` (a JSON object), replacing those stored.
    package static func write(_ properties: JSONValue, _ store: DocumentStore, in transaction: LMDBTransaction) throws {
        guard let metadata = store.metadata else { return }
        var bytes: [UInt8] = []
        JSONWriter.write(properties, into: &bytes)
        try transaction.put(metadata, key, bytes)
    }
}
