import SetteeCore

/// CouchDB's partitions (`couch_partition`): in a partitioned database every
/// document id but those of design and `_local` documents is
/// `partition:rest`, and the documents of one partition can be read apart.
public enum Partition {
    /// The partition of `id` (the text before its first colon), or nil when it has none.
    public static func of(_ id: String) -> String? {
        guard let colon = id.utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        return String(id[..<colon])
    }

    /// Checks a partition name (`couch_partition:validate_partition/1`).
    /// - Throws: ``PartitionError`` `illegal_partition`: empty, starting with `_`, or holding a colon.
    public static func validate(_ partition: String) throws(PartitionError) {
        if partition.isEmpty { throw PartitionError(error: "illegal_partition", reason: "Partition must not be empty") }
        if partition.utf8.first == UInt8(ascii: "_") {
            throw PartitionError(error: "illegal_partition", reason: "Partition must not start with an underscore")
        }
        if partition.utf8.contains(UInt8(ascii: ":")) {
            throw PartitionError(error: "illegal_partition", reason: "Partition must not contain a colon")
        }
    }

    /// Checks a document id written to a partitioned database (`couch_partition:validate_docid/1`):
    /// design and `_local` documents are exempt; any other id is `partition:rest`, with a valid
    /// partition and a `rest` that is a valid document id of its own.
    /// - Throws: ``PartitionError`` `illegal_docid` or `illegal_partition`, with CouchDB's reasons.
    public static func validateDocumentID(_ id: String) throws(PartitionError) {
        if id.hasPrefix("_design/") || id.hasPrefix("_local/") { return }
        guard let partition = of(id) else {
            throw PartitionError(error: "illegal_docid", reason: "Doc id must be of form partition:id", id: id)
        }
        do {
            try validate(partition)
        } catch {
            throw PartitionError(error: error.error, reason: error.reason, id: id)
        }
        let rest = id.utf8.dropFirst(partition.utf8.count + 1)
        if rest.isEmpty { throw PartitionError(error: "illegal_docid", reason: "Document id must not be empty", id: id) }
        if rest.first == UInt8(ascii: "_") {
            let restText = String(decoding: rest, as: UTF8.self)
            if restText == "_design/" || restText == "_local/" {
                throw PartitionError(error: "illegal_docid", reason: "Illegal document id `\(restText)`", id: id)
            }
            if !restText.hasPrefix("_design/") && !restText.hasPrefix("_local/") {
                throw PartitionError(error: "illegal_docid", reason: "Only reserved document ids may start with underscore.", id: id)
            }
        }
    }

    /// Checks a design document written to a database that is not partitioned
    /// (`couch_mrview:validate/2`): its views cannot be partitioned.
    /// - Throws: ``PartitionError`` `invalid_design_doc` for `"options": {"partitioned": true}`.
    static func validateDesignDocument(_ body: [UInt8]) throws(PartitionError) {
        // Most design documents say nothing of partitions: parsed only when the word is there.
        guard body.count >= 11, contains(body, Array("partitioned".utf8)),
              (try? JSONParser.parse(body))?["options"]?["partitioned"] == .bool(true) else { return }
        throw PartitionError(error: "invalid_design_doc", reason: "partitioned option cannot be true in a non-partitioned database.")
    }

    private static func contains(_ bytes: [UInt8], _ word: [UInt8]) -> Bool {
        guard bytes.count >= word.count else { return false }
        for start in 0...(bytes.count - word.count) where bytes[start] == word[0] {
            if bytes[start..<start + word.count].elementsEqual(word) { return true }
        }
        return false
    }

    /// The first and last ids of a partition's documents in `_all_docs` order
    /// (`couch_partition:start_key/1`, `end_key/1`): `p:` and `p;`, the end excluded.
    public static func idRange(_ partition: String) -> (start: String, end: String) {
        (partition + ":", partition + ";")
    }
}
