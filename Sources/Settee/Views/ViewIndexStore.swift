import CSetteeLMDB
import Foundation

/// Where an index stands, kept in the `views` table under its signature and
/// committed with the rows it describes.
struct ViewIndexState: Sendable, Equatable {
    /// The database sequence the index reflects.
    var sequence: UInt64 = 0
    var rowCount = 0
    /// Map calls that threw, since the index was created.
    var mapErrors = 0
    /// A view that produced it (for `settee info`).
    var designDocument = ""
    var view = ""

    var json: JSONValue {
        [
            "seq": .number(Double(sequence)), "rows": .number(Double(rowCount)), "map_errors": .number(Double(mapErrors)),
            "ddoc": .string(designDocument), "view": .string(view),
        ]
    }

    init(designDocument: String, view: String) {
        self.designDocument = designDocument
        self.view = view
    }

    init(json: JSONValue) {
        sequence = UInt64(json["seq"]?.doubleValue ?? 0)
        rowCount = Int(json["rows"]?.doubleValue ?? 0)
        mapErrors = Int(json["map_errors"]?.doubleValue ?? 0)
        designDocument = json["ddoc"]?.stringValue ?? ""
        view = json["view"]?.stringValue ?? ""
    }
}

/// The tables of one view index: rows by full key, and the back index (doc id →
/// the stored keys of its rows) that lets a changed document's old rows go.
struct ViewIndexTables: Sendable {
    let signature: String
    let rows: MDB_dbi
    let back: MDB_dbi
}

/// View indexes in LMDB, one per signature. Knows rows, not JavaScript.
final class ViewIndexStore: Sendable {
    let environment: LMDBEnvironment
    /// signature → ``ViewIndexState`` as JSON.
    let states: MDB_dbi

    init(environment: LMDBEnvironment) throws {
        self.environment = environment
        states = try environment.openDatabases(["views"])[0]
    }

    private static func rowsTable(_ signature: String) -> String { "rows:" + signature }
    private static func backTable(_ signature: String) -> String { "back:" + signature }

    /// The tables of an index, created when missing.
    func tables(for signature: String) throws -> ViewIndexTables {
        let handles = try environment.openDatabases([Self.rowsTable(signature), Self.backTable(signature)])
        return ViewIndexTables(signature: signature, rows: handles[0], back: handles[1])
    }

    func state(_ signature: String, in transaction: LMDBTransaction) throws -> ViewIndexState? {
        guard let bytes = try transaction.get(states, Array(signature.utf8)) else { return nil }
        return ViewIndexState(json: try JSONParser.parse(bytes))
    }

    func setState(_ state: ViewIndexState, for signature: String, in transaction: LMDBTransaction) throws {
        var bytes: [UInt8] = []
        JSONWriter.write(state.json, into: &bytes)
        try transaction.put(states, Array(signature.utf8), bytes)
    }

    /// Every index's signature and state.
    func allStates(in transaction: LMDBTransaction) throws -> [(signature: String, state: ViewIndexState)] {
        var result: [(String, ViewIndexState)] = []
        try transaction.withCursor(states) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                result.append((String(decoding: key, as: UTF8.self), ViewIndexState(json: try JSONParser.parse(value))))
                entry = try cursor.next()
            }
        }
        return result
    }

    /// Removes an index: its rows, back index and state.
    func drop(_ signature: String, in transaction: LMDBTransaction) throws {
        try environment.dropDatabase(Self.rowsTable(signature), in: transaction)
        try environment.dropDatabase(Self.backTable(signature), in: transaction)
        try transaction.delete(states, Array(signature.utf8))
    }

    /// Replaces a document's rows in one index: removes the rows its back index
    /// lists, writes `rows` (sorted by stored key) and records their keys.
    /// Returns the change in the index's row count.
    func replaceRows(of id: UnsafeRawBufferPointer, with rows: ArraySlice<EncodedRow>, in tables: ViewIndexTables,
                     transaction: LMDBTransaction, scratch: inout [UInt8]) throws -> Int {
        var removed = 0
        if let old = try transaction.get(tables.back, id) {
            // Copy first: deleting rows may move the page the back entry is on.
            let keys = Array(old)
            try keys.withUnsafeBytes { keys in
                var offset = 0
                while offset < keys.count {
                    let length = Int(keys.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
                    try transaction.delete(tables.rows, UnsafeRawBufferPointer(rebasing: keys[offset + 2..<offset + 2 + length]))
                    offset += 2 + length
                    removed += 1
                }
            }
            if rows.isEmpty { try transaction.delete(tables.back, id) }
        }
        guard !rows.isEmpty else { return -removed }
        scratch.removeAll(keepingCapacity: true)
        for row in rows {
            try transaction.put(tables.rows, row.storedKey, row.value)
            withUnsafeBytes(of: UInt16(row.storedKey.count)) { scratch.append(contentsOf: $0) }
            scratch.append(contentsOf: row.storedKey)
        }
        try scratch.withUnsafeBytes { try transaction.put(tables.back, id, $0) }
        return rows.count - removed
    }

    /// Bytes the index's tables take.
    func bytes(of tables: ViewIndexTables, in transaction: LMDBTransaction) throws -> Int {
        try transaction.bytes(tables.rows) + transaction.bytes(tables.back)
    }
}
