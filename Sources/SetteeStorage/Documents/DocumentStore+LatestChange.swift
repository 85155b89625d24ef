import SetteeCore

extension DocumentStore {
    /// The document's latest change (its entry in the changes feed), read
    /// without its body; nil when the id was never written.
    package func latestChange(of id: String, in transaction: LMDBTransaction) throws -> Change? {
        var key = id
        return try key.withUTF8 { key in
            try transaction.get(docs, UnsafeRawBufferPointer(key)).map { bytes in
                let record = try DocumentRecord(bytes: bytes, id: key, path: environment.path)
                return Change(sequence: record.sequence, id: id, revision: record.revision, isDeleted: record.isDeleted)
            }
        }
    }
}
