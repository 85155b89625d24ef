import Foundation
import SetteeCore
import SetteeStorage
import Synchronization

/// Partitioned databases (CouchDB's `PUT /db?partitioned=true`): every
/// document id but design and `_local` documents' is `partition:id`, and the
/// documents, `find` indexes and views of one partition can be read apart.
extension Database {
    /// Whether the database is partitioned: its stored properties say so
    /// (`makePartitioned()`). A partitioned database refuses to write a
    /// document whose id is not `partition:id` (``Partition/validateDocumentID(_:)``).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func isPartitioned() throws -> Bool {
        let store = try store
        // Read again only after a commit: every view query and `find` asks.
        let committed = store.environment.lastCommittedTransaction
        if let known = partitionedProperty.withLock({ $0 }), known.transaction == committed { return known.partitioned }
        let partitioned = try store.environment.read { try DatabaseProperties.isPartitioned(store, in: $0) }
        partitionedProperty.withLock { $0 = (committed, partitioned) }
        return partitioned
    }

    /// The database's properties, as CouchDB's `GET /db` shows them in `props`:
    /// `{"partitioned": true}` for a partitioned database, `{}` otherwise.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func properties() throws -> JSONValue {
        let store = try store
        return try store.environment.read { try DatabaseProperties.read(store, in: $0) }
    }

    /// Makes a new database partitioned, as CouchDB's `PUT /db?partitioned=true`
    /// creates it; the property is kept with the database's files.
    /// - Throws: ``PartitionError`` (`bad_request`) when the database already
    ///   holds documents (design documents and tombstones included; `_local`
    ///   documents do not count): a database is partitioned from its creation.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func makePartitioned() throws {
        let store = try store
        try store.writing { transaction, _ in
            var properties = try DatabaseProperties.read(store, in: transaction)
            if properties["partitioned"] == .bool(true) { return }
            // Documents and the find indexes already read were made under the other rule.
            let counts = try store.counts(in: transaction)
            if counts.live + counts.deleted > 0 {
                throw PartitionError(error: "bad_request", reason: "A database that holds documents cannot be made partitioned: a database is partitioned when it is created.")
            }
            guard case .object(var members) = properties else { return }
            members.removeAll { $0.key == "partitioned" }
            members.append(("partitioned", true))
            properties = .object(members)
            try DatabaseProperties.write(properties, store, in: transaction)
        }
    }

    /// What partition `partition` holds: its documents, tombstones and their sizes
    /// (CouchDB's `GET /db/_partition/{partition}`).
    /// - Throws: ``PartitionError`` `illegal_partition` for a partition name CouchDB refuses.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func partitionCounts(_ partition: String) throws -> PartitionCounts {
        try Partition.validate(partition)
        let range = Partition.idRange(partition)
        return try store.partitionCounts(from: Array(range.start.utf8), to: Array(range.end.utf8))
    }

    /// Whether the database is partitioned, read on a Settee queue (see ``isPartitioned()``).
    public func isPartitioned() async throws -> Bool {
        try await background { try self.isPartitioned() }
    }

    /// The database's properties, read on a Settee queue (see ``properties()``).
    public func properties() async throws -> JSONValue {
        try await background { try self.properties() }
    }

    /// Makes a new database partitioned, on a Settee queue (see `makePartitioned()`).
    public func makePartitioned() async throws {
        try await background { try self.makePartitioned() }
    }

    /// What a partition holds, read on a Settee queue (see ``partitionCounts(_:)``).
    public func partitionCounts(_ partition: String) async throws -> PartitionCounts {
        try await background { try self.partitionCounts(partition) }
    }
}
