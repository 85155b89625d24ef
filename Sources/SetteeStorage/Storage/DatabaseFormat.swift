import CSetteeLMDB
import Foundation
import SetteeCore

/// What marks an LMDB environment as a Settee database: a format record,
/// `{"format":"settee","version":1}` under the key `format` in the table
/// `settee`, written when the database is created. The same table holds the
/// kept document counts (``KeptDocumentCounts``), which a Settee that knows
/// nothing of them may leave behind without harm: the format stays version 1.
///
/// Without it, Settee would take any LMDB file with a `docs` table for its
/// own: read another program's records as documents (and trap on them), and
/// add its tables to that program's file. A database made before the record
/// existed (Settee's tables and nothing else) is adopted: the record is
/// written the first time it is opened for writing.
package enum DatabaseFormat {
    package static let table = "settee"
    package static let key = Array("format".utf8)
    package static let name = "settee"
    /// The newest layout this Settee reads and writes.
    package static let version = 1

    /// The tables a Settee database holds.
    package static let documentTables = ["docs", "seqs"]
    package static let indexStateTable = "views"
    /// Tables added since version 1 without changing it (an older Settee
    /// leaves them alone): `_local/` documents, the purge log, expirations,
    /// revision trees.
    package static let laterTables = ["local", "purges", "expirations", "expiration_times", "revtrees", "oldrevs"]

    package static func isSetteeTable(_ name: String) -> Bool {
        name == table || name == indexStateTable || documentTables.contains(name) || laterTables.contains(name)
            || name == AttachmentBodies.referencesTable || name == AttachmentBodies.chunksTable
            || name.hasPrefix("rows:") || name.hasPrefix("back:") || name.hasPrefix("chunks:")
    }

    package static var record: [UInt8] {
        var bytes: [UInt8] = []
        JSONWriter.write(["format": .string(name), "version": .number(Double(version))], into: &bytes)
        return bytes
    }

    /// Checks that `environment` is a Settee database this version can use,
    /// creating Settee's tables and the format record in an empty one and
    /// adopting an unmarked one. Only reads when the record is there.
    package static func check(_ environment: LMDBEnvironment) throws {
        let names = try environment.tableNames()
        if names.contains(table) {
            let marker = try environment.openDatabases([table])[0]
            let stored = try environment.read { try $0.get(marker, key).map(Array.init) }
            try checkRecord(stored, in: environment.path)
            return
        }
        if !names.isEmpty {
            // Settee's tables and nothing else, with its documents: a Settee database from before the record.
            let adoptable = names.allSatisfy(isSetteeTable) && documentTables.allSatisfy(names.contains)
            guard adoptable else {
                let shown = names.prefix(5).joined(separator: ", ") + (names.count > 5 ? ", …" : "")
                throw StorageError(code: MDB_INCOMPATIBLE, operation: "opening the database at \(environment.path)",
                                   explanation: "\(environment.path) holds an LMDB file that is not a Settee database (it has no Settee format record, and its tables are not Settee's: \(shown)); Settee leaves it as it is")
            }
            // Read-only, it is read as it is; the record waits for a write.
            if environment.isReadOnly { return }
        }
        try environment.write { transaction in
            let marker = try environment.database(table, in: transaction)
            // Another process may have created the database meanwhile.
            if let stored = try transaction.get(marker, key) {
                try checkRecord(Array(stored), in: environment.path)
                return
            }
            for name in documentTables + [indexStateTable] { _ = try environment.database(name, in: transaction) }
            try transaction.put(marker, key, record)
            // A new database starts with its document counts kept; an adopted one is counted when its store opens.
            if names.isEmpty {
                try transaction.put(marker, KeptDocumentCounts.key, KeptDocumentCounts(counts: DocumentCounts(), sequence: 0).record)
            }
        }
    }

    private static func checkRecord(_ stored: [UInt8]?, in path: String) throws {
        let operation = "opening the database at \(path)"
        guard let stored else {
            throw StorageError(code: MDB_INCOMPATIBLE, operation: operation,
                               explanation: "\(path) is not a Settee database: its table \"settee\" has no format record")
        }
        let value = try? JSONParser.parse(stored)
        guard value?["format"]?.stringValue == name, let found = value?["version"]?.doubleValue else {
            throw StorageError(code: MDB_INCOMPATIBLE, operation: operation,
                               explanation: "\(path) is not a Settee database: its format record is \(String(decoding: stored.prefix(200), as: UTF8.self))")
        }
        guard found <= Double(version) else {
            throw StorageError(code: MDB_INCOMPATIBLE, operation: operation,
                               explanation: "\(path) is a Settee database of format version \(Int(found)), written by a newer Settee; this one reads versions up to \(version)")
        }
    }
}
