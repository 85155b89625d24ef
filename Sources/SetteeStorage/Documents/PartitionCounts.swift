import SetteeCore

/// What one partition of a partitioned database holds (CouchDB's
/// `GET /db/_partition/{p}`): its documents and tombstones, and their bytes.
public struct PartitionCounts: Sendable, Equatable {
    /// Live documents whose id starts with `partition:`.
    public var documentCount = 0
    /// Deleted documents (tombstones) of the partition.
    public var deletedDocumentCount = 0
    /// The bytes of the partition's stored documents (bodies, without attachments).
    public var activeBytes = 0
    /// The bytes of the partition's live documents' JSON.
    public var externalBytes = 0

    public init() {}
}

extension DocumentStore {
    /// Counts the documents whose id lies in `[start, end)` (bytes).
    package func partitionCounts(from start: [UInt8], to end: [UInt8]) throws -> PartitionCounts {
        var counts = PartitionCounts()
        try environment.read { transaction in
            try transaction.withCursor(docs) { cursor in
                var entry = try cursor.seek(atOrAfter: start)
                while let (key, value) = entry, compareBytes(key, end) < 0 {
                    let record = try DocumentRecord(bytes: value, id: key, path: environment.path)
                    counts.activeBytes += value.count
                    if record.isDeleted {
                        counts.deletedDocumentCount += 1
                    } else if try !isExpired(key, in: transaction) {
                        counts.documentCount += 1
                        counts.externalBytes += record.body.count
                    }
                    entry = try cursor.next()
                }
            }
        }
        return counts
    }
}
