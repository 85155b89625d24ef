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
        if id.utf8.first == UInt8(ascii: "_") && id.hasPrefix(Self.localPrefix) {
            guard let document = try record(id, in: transaction), !document.isDeleted else { return nil }
            return document.json
        }
        var key = id
        return try key.withUTF8 { utf8 throws -> String? in
            let key = UnsafeRawBufferPointer(utf8)
            guard let bytes = try transaction.get(docs, key) else { return nil }
            let stored = try DocumentRecord(bytes: bytes, id: key, path: environment.path)
            // As record(_:in:): past its expiration time a document reads as missing.
            guard !stored.isDeleted, try !isExpired(key, in: transaction) else { return nil }
            scratch.removeAll(keepingCapacity: true)
            stored.appendFullJSON(id: key, into: &scratch)
            if conflicts { try appendConflicts(of: stored, key: key, to: &scratch, deleted: false, in: transaction) }
            return String(decoding: scratch, as: UTF8.self)
        }
    }
}
