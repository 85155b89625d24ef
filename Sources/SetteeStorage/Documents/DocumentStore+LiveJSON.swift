import SetteeCore

extension DocumentStore {
    /// The JSON text of the document `id` as ``Document/json`` writes it
    /// (`{"_id":…,"_rev":…,…}`), when it exists, is not deleted and has not
    /// expired; nil otherwise. Made from the stored record in `scratch` (its
    /// room kept for the next call) and copied once into the string: no
    /// ``Document`` is built on the way, so a reader of many documents (a
    /// view's `include_docs`, `find`) makes one string each. With
    /// `conflicts`, `"_conflicts"` is added when the document has live
    /// losing leaves (a view's `conflicts=true`).
    package func liveJSON(_ id: String, conflicts: Bool = false, in transaction: LMDBTransaction, scratch: inout [UInt8]) throws -> String? {
        var key = id
        return try key.withUTF8 { utf8 throws -> String? in
            guard try liveJSON(UnsafeRawBufferPointer(utf8), conflicts: conflicts, in: transaction, into: &scratch) else { return nil }
            return String(decoding: scratch, as: UTF8.self)
        }
    }

    /// ``liveJSON(_:conflicts:in:scratch:)`` of the document whose id's UTF-8
    /// bytes are `id`, written into `json` (emptied first) rather than made
    /// a string: false, `json` left empty, when the document does not
    /// exist, is deleted or has expired.
    package func liveJSON(_ id: UnsafeRawBufferPointer, conflicts: Bool = false, in transaction: LMDBTransaction, into json: inout [UInt8]) throws -> Bool {
        json.removeAll(keepingCapacity: true)
        if id.first == UInt8(ascii: "_") && id.starts(with: Self.localPrefix.utf8) {
            guard let document = try record(String(decoding: id, as: UTF8.self), in: transaction), !document.isDeleted else { return false }
            json.append(contentsOf: document.json.utf8)
            return true
        }
        guard let bytes = try transaction.get(docs, id) else { return false }
        let stored = try DocumentRecord(bytes: bytes, id: id, path: environment.path)
        // As record(_:in:): past its expiration time a document reads as missing.
        guard !stored.isDeleted, try !isExpired(id, in: transaction) else { return false }
        stored.appendFullJSON(id: id, into: &json)
        if conflicts { try appendConflicts(of: stored, key: id, to: &json, deleted: false, in: transaction) }
        return true
    }
}
