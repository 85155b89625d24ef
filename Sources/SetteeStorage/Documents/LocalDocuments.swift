import CSetteeLMDB
import Foundation
import SetteeCore

/// `_local/` documents, as CouchDB keeps them: in their own table (`local`,
/// id → ``DocumentRecord`` at sequence 0), never in the changes feed, so
/// never in `_all_docs`, views or the document counts; revisions `0-1`,
/// `0-2`, … (``Revision/init(local:)``); deleted without a tombstone; not
/// checked by `validate_doc_update`. Replication checkpoints live there.
extension DocumentStore {
    package static let localPrefix = "_local/"

    /// Opens the tables added since format version 1 (``DatabaseFormat/laterTables``):
    /// created when missing, except in a database opened read-only, where a
    /// missing one is nil (and reads as empty).
    static func openOptionalTables(_ environment: LMDBEnvironment) throws -> [LMDBTable?] {
        let names = DatabaseFormat.laterTables
        if !environment.isReadOnly { return try environment.openDatabases(names) }
        let present = Set(try environment.tableNames())
        return try names.map { present.contains($0) ? try environment.openDatabases([$0])[0] : nil }
    }

    /// The table a write needs, which only a read-only database lacks.
    func writable(_ table: LMDBTable?) throws -> LMDBTable {
        guard let table else {
            throw StorageError(code: EROFS, operation: "writing to the database at \(environment.path)")
        }
        return table
    }

    /// A local document, or nil when there is none.
    package func localRecord(_ id: String, in transaction: LMDBTransaction) throws -> Document? {
        guard let local else { return nil }
        var key = id
        return try key.withUTF8 { key in
            try transaction.get(local, UnsafeRawBufferPointer(key)).map {
                try DocumentRecord(bytes: $0, id: key, path: environment.path).document(id: id)
            }
        }
    }

    /// Every local document, in the order of their ids' bytes.
    package func localDocuments() throws -> [Document] {
        guard let local else { return [] }
        return try environment.read { transaction in
            try transaction.withCursor(local) { cursor in
                var documents: [Document] = []
                var entry = try cursor.first()
                while let (key, value) = entry {
                    let id = String(decoding: key, as: UTF8.self)
                    documents.append(try DocumentRecord(bytes: value, id: key, path: environment.path).document(id: id))
                    entry = try cursor.next()
                }
                return documents
            }
        }
    }

    /// Writes or deletes a local document: `_rev` must name its current
    /// revision (none for a new one); the write takes no sequence number
    /// (its result's is 0) and changes no count. A `replicated` write
    /// (`new_edits: false`) is not checked against the current revision:
    /// its own revision is counted on, as CouchDB counts on a local
    /// document's `_rev`.
    func applyLocal(_ edit: DocumentEdit, id: String, in transaction: LMDBTransaction, scratch: inout [UInt8],
                    replicated: Bool = false) throws -> WriteResult {
        let local = try writable(local)
        let current = try localRecord(id, in: transaction)?.revision
        if edit.deleted {
            guard let current else {
                if replicated { return WriteResult(id: id, revision: Revision(local: 0), sequence: 0) }
                throw DocumentError(.notFound, "missing", id: id)
            }
            if !replicated, let revision = edit.revision, revision != current { throw DocumentError.conflict(id) }
            _ = try transaction.delete(local, Array(id.utf8))
            return WriteResult(id: id, revision: Revision(local: 0), sequence: 0)
        }
        guard replicated || edit.revision == current else { throw DocumentError.conflict(id) }
        let base = (replicated ? edit.revision?.localNumber : current?.localNumber) ?? 0
        guard base < UInt64.max else {
            throw DocumentError(.badRequest, "the local document's revision 0-\(base) is the last there can be: delete it to write it again", id: id)
        }
        let revision = Revision(local: base + 1)
        edit.body.withUnsafeBytes { DocumentRecord.encode(sequence: 0, revision: revision, deleted: false, body: $0, into: &scratch) }
        try transaction.put(local, Array(id.utf8), scratch)
        return WriteResult(id: id, revision: revision, sequence: 0)
    }
}
