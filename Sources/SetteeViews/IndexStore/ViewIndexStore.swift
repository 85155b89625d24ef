import Foundation
import Synchronization
package import SetteeCore
@_spi(LMDB) package import SetteeStorage

/// Where an index stands, kept in the `views` table under its signature and
/// committed with the rows it describes.
package struct ViewIndexState: Sendable, Equatable {
    /// The database sequence the index reflects.
    package var sequence: UInt64 = 0
    package var rowCount = 0
    /// Map calls that threw, since the index was created.
    package var mapErrors = 0
    /// Whether the stored chunk reductions reflect the rows (see ``StoredReductions``);
    /// false while a bulk build is under way, which rebuilds them at its end,
    /// and between a steady update's rows and its JavaScript reduce's chunks
    /// (computed outside the writes: see ``ViewIndexer``). Queries walk the
    /// rows meanwhile.
    package var chunksCurrent = true
    /// A view that produced it (for `settee info`).
    package var designDocument = ""
    package var view = ""
    /// The database's purge sequence the index has caught up with: the rows
    /// of documents purged after it are still there (``ViewIndexer``
    /// removes them before its next update). Stored only when not 0.
    package var purgeSequence: UInt64 = 0

    package var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("seq", .number(Double(sequence))), ("rows", .number(Double(rowCount))), ("map_errors", .number(Double(mapErrors))),
            ("ddoc", .string(designDocument)), ("view", .string(view)), ("chunks", .bool(chunksCurrent)),
        ]
        if purgeSequence > 0 { members.append(("purge_seq", .number(Double(purgeSequence)))) }
        return .object(members)
    }

    package init(designDocument: String, view: String) {
        self.designDocument = designDocument
        self.view = view
    }

    package init(json: JSONValue) {
        sequence = UInt64(json["seq"]?.doubleValue ?? 0)
        rowCount = Int(json["rows"]?.doubleValue ?? 0)
        mapErrors = Int(json["map_errors"]?.doubleValue ?? 0)
        designDocument = json["ddoc"]?.stringValue ?? ""
        view = json["view"]?.stringValue ?? ""
        purgeSequence = UInt64(json["purge_seq"]?.doubleValue ?? 0)
        // Indexes written before chunks existed have none yet.
        chunksCurrent = json["chunks"] == true
    }
}

/// An index's state as some transaction read it, and what the queries reading
/// that same state may share: its rows and chunks are those the state was
/// committed with, so nothing kept here can go stale (a write makes a new state).
package final class IndexSnapshot: Sendable {
    package let bytes: [UInt8]
    package let state: ViewIndexState
    private let kept = Mutex<(reads: Int, counts: ChunkCounts?)>((0, nil))

    /// Queries that read a state before its chunk counts are kept: an index
    /// that changes between queries never pays for them.
    package static let readsBeforeCounts = 3

    package init(bytes: [UInt8], state: ViewIndexState) {
        self.bytes = bytes
        self.state = state
    }

    /// The chunk counts kept so far, if any.
    package var keptChunkCounts: ChunkCounts? {
        kept.withLock { $0.counts }
    }

    /// The index's chunk boundaries in memory (see ``ChunkCounts``), once enough
    /// queries have read this state (nil before); `load` reads them in a
    /// transaction that sees this state.
    package func chunkCounts(_ load: () throws -> ChunkCounts) throws -> ChunkCounts? {
        try kept.withLock { kept in
            if let counts = kept.counts { return counts }
            kept.reads += 1
            guard kept.reads >= Self.readsBeforeCounts else { return nil }
            kept.counts = try load()
            return kept.counts
        }
    }
}

/// The tables of one view index: rows by full key, the back index (doc id →
/// the stored keys of its rows) that lets a changed document's old rows go, and
/// the rows' stored chunk reductions.
package struct ViewIndexTables: Sendable, Equatable {
    package let signature: String
    package let rows: LMDBTable
    package let back: LMDBTable
    package let chunks: LMDBTable
}

/// View indexes in LMDB, one per signature. Knows rows, not JavaScript.
package final class ViewIndexStore: Sendable {
    package let environment: LMDBEnvironment
    /// signature → ``ViewIndexState`` as JSON.
    package let states: LMDBTable
    /// Tables by signature, and each index's state as last read (with the
    /// bytes it was parsed from): queries neither reopen nor reparse them.
    private let tablesCache = Mutex<[String: ViewIndexTables]>([:])
    private let stateCache = Mutex<[String: IndexSnapshot]>([:])
    /// Checkpoints left uncommitted: updates that changed nothing but an
    /// index's sequence skip the commit and its flush to disk (see
    /// ``ViewIndexer``). By signature: the committed sequence they build on,
    /// and the sequence the index reflects. Lost with the process, which then
    /// maps those documents again and finds the same rows.
    private let checkpoints = Mutex<[String: (committed: UInt64, current: UInt64)]>([:])

    package init(environment: LMDBEnvironment) throws {
        self.environment = environment
        states = try environment.openDatabases(["views"])[0]
    }

    /// The tables each index takes: rows, back index, chunks.
    package static let tablesPerIndex = 3
    /// The named tables a process may open (`mdb_env_set_maxdbs` in
    /// ``LMDBEnvironment/open(directory:initialMapSize:maximumMapSize:readAhead:)``).
    package static let tableHandles = 4_096
    /// Named tables besides the indexes': `docs`, `seqs`, `views`, `settee`,
    /// ``DatabaseFormat/laterTables`` and the attachments' two.
    package static let otherTables = 4 + DatabaseFormat.laterTables.count + 2
    /// The most indexes a database holds: past it, opening a table fails
    /// (`MDB_DBS_FULL`) and with it every command that opens one. Design
    /// documents needing more are refused when stored.
    package static var maximumIndexes: Int { (tableHandles - otherTables) / tablesPerIndex }

    private static func rowsTable(_ signature: String) -> String { "rows:" + signature }
    private static func backTable(_ signature: String) -> String { "back:" + signature }
    private static func chunksTable(_ signature: String) -> String { "chunks:" + signature }

    /// The tables of an index, created when missing.
    package func tables(for signature: String) throws -> ViewIndexTables {
        if let tables = tablesCache.withLock({ $0[signature] }) { return tables }
        let handles = try environment.openDatabases([Self.rowsTable(signature), Self.backTable(signature), Self.chunksTable(signature)])
        let tables = ViewIndexTables(signature: signature, rows: handles[0], back: handles[1], chunks: handles[2])
        tablesCache.withLock { $0[signature] = tables }
        return tables
    }

    /// Whether these are the handles the index's tables have now. Checked
    /// inside a read transaction that found the index's state, before reading
    /// its tables: handles taken before the transaction began may belong to
    /// an index removed since (their slots closed, and perhaps given to other
    /// tables) that came back under other handles. Handles still current once
    /// a transaction has begun stay open until it ends (``TableHandleClosings``).
    package func areCurrent(_ tables: ViewIndexTables) -> Bool {
        tablesCache.withLock { $0[tables.signature] } == tables
    }

    /// The index's state in `transaction`, its sequence advanced by a
    /// checkpoint kept in memory on top of it.
    package func state(_ signature: String, in transaction: LMDBTransaction) throws -> ViewIndexState? {
        guard var state = try snapshot(signature, in: transaction)?.state else { return nil }
        state.sequence = currentSequence(signature, committed: state.sequence)
        return state
    }

    /// The sequence the index reflects, given the one its committed state says.
    package func currentSequence(_ signature: String, committed: UInt64) -> UInt64 {
        checkpoints.withLock { kept in kept[signature].flatMap { $0.committed == committed ? $0.current : nil } } ?? committed
    }

    /// The committed sequence under an index state whose sequence is `current`.
    package func committedSequence(_ signature: String, current: UInt64) -> UInt64 {
        checkpoints.withLock { kept in kept[signature].flatMap { $0.current == current ? $0.committed : nil } } ?? current
    }

    /// Records that the index, whose state said `from`, now reflects `current`
    /// with nothing else changed, and was not committed.
    package func keepCheckpoint(_ signature: String, from: UInt64, to current: UInt64) {
        let committed = committedSequence(signature, current: from)
        checkpoints.withLock { $0[signature] = (committed, current) }
    }

    /// Runs `body` in one read transaction on `view`'s index: with the index's
    /// state there (nil when the index has no rows in that snapshot; its
    /// tables are then not to be read) and its tables. When `tables`, taken
    /// before the transaction began, are no longer the index's handles
    /// (another process removed the index and it came back: see
    /// ``areCurrent(_:)``), they are taken again and `body` runs in a new
    /// transaction; it has read nothing before.
    /// - Throws: ``IndexRemovedError`` when `requiringIndex` (the index was
    ///   just brought up to date) and the index has no state: another process
    ///   removed it since. Damage found, naming the view and its index.
    package func read<T>(_ view: ViewDefinition, tables: ViewIndexTables, requiringIndex: Bool,
                         _ body: (_ snapshot: IndexSnapshot?, _ tables: ViewIndexTables, _ transaction: LMDBTransaction) throws -> T) throws -> T {
        var tables = tables
        do {
            while true {
                let result: T? = try environment.read { transaction in
                    let snapshot = try self.snapshot(view.signature, in: transaction)
                    if snapshot == nil && requiringIndex { throw IndexRemovedError(view: view.path, signature: view.signature) }
                    if snapshot != nil && !areCurrent(tables) { return nil }
                    return try body(snapshot, tables, transaction)
                }
                if let result { return result }
                tables = try self.tables(for: view.signature)
            }
        } catch let error as StorageError where error.isDamage {
            throw error.naming(view)
        }
    }

    /// The index's state in `transaction`, with what queries of that state keep.
    package func snapshot(_ signature: String, in transaction: LMDBTransaction) throws -> IndexSnapshot? {
        var key = signature
        guard let bytes = try key.withUTF8({ try transaction.get(states, UnsafeRawBufferPointer($0)) }) else { return nil }
        if let cached = stateCache.withLock({ $0[signature] }), compareBytes(bytes, cached.bytes) == 0 { return cached }
        let snapshot = IndexSnapshot(bytes: Array(bytes), state: ViewIndexState(json: try JSONParser.parse(bytes)))
        stateCache.withLock { $0[signature] = snapshot }
        return snapshot
    }

    package func setState(_ state: ViewIndexState, for signature: String, in transaction: LMDBTransaction) throws {
        var bytes: [UInt8] = []
        JSONWriter.write(state.json, into: &bytes)
        try transaction.put(states, Array(signature.utf8), bytes)
    }

    /// Every index's signature and state.
    package func allStates(in transaction: LMDBTransaction) throws -> [(signature: String, state: ViewIndexState)] {
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

    /// Removes an index: its rows, back index and state. Its tables are
    /// emptied, and their handles close once this process's transactions from
    /// before are over; readers that began after see no state and read no
    /// table (``ViewQueryRunner``, ``Database/viewInfo()``).
    package func drop(_ signature: String, in transaction: LMDBTransaction) throws {
        try environment.emptyDatabase(Self.rowsTable(signature), in: transaction)
        try environment.emptyDatabase(Self.backTable(signature), in: transaction)
        try environment.emptyDatabase(Self.chunksTable(signature), in: transaction)
        try transaction.delete(states, Array(signature.utf8))
        tablesCache.withLock { $0[signature] = nil }
        checkpoints.withLock { $0[signature] = nil }
    }

    /// Removes a document's back-index entry from one index, adding the
    /// stored keys of the rows it lists to `oldKeys`, for
    /// ``deleteRows(_:from:transaction:removed:)`` to delete. Returns how
    /// many rows it listed.
    package func removeBackEntry(of id: UnsafeRawBufferPointer, in tables: ViewIndexTables, transaction: LMDBTransaction,
                                 oldKeys: inout PackedByteStrings) throws -> Int {
        guard let old = try transaction.get(tables.back, id) else { return 0 }
        let count = try Self.appendStoredKeys(inBackEntry: old, id: id, to: &oldKeys)
        _ = try transaction.delete(tables.back, id)
        return count
    }

    /// Replaces a document's rows with these (stored keys and values, in
    /// emit order) in the back index, through `cursor` on its table: unless
    /// the index holds exactly these (its back index lists the same, and the
    /// rows hold the same values), the keys of the old rows (those its back
    /// entry lists) are added to `oldKeys`, for ``deleteRows(_:from:transaction:removed:)``
    /// to delete, and the back entry is set to the new ones (or removed for
    /// none). Returns nil when the rows were the same, else how many old rows
    /// there were; the caller writes the new rows.
    package func replaceRows(of id: UnsafeRawBufferPointer, keys: [UnsafeRawBufferPointer], values: [UnsafeRawBufferPointer],
                             in tables: ViewIndexTables, cursor: LMDBCursor, transaction: LMDBTransaction,
                             scratch: inout [UInt8], oldKeys: inout PackedByteStrings) throws -> Int? {
        try Self.makeBackEntry(keys: keys, values: values, in: &scratch)
        guard let old = try cursor.find(id)?.value else {
            if !scratch.isEmpty { try scratch.withUnsafeBytes { try cursor.put(id, $0) } }
            return keys.isEmpty ? nil : 0
        }
        if compareBytes(old, scratch) == 0, try zip(keys, values).allSatisfy({ key, value in
            try transaction.get(tables.rows, key).map { compareBytes($0, value) == 0 } ?? false
        }) {
            return nil
        }
        // The old keys are copied out before the entry's put (which may move the page it is on).
        let count = try Self.appendStoredKeys(inBackEntry: old, id: id, to: &oldKeys)
        if scratch.isEmpty {
            try cursor.deleteCurrent()
        } else {
            try scratch.withUnsafeBytes { try cursor.put(id, $0) }
        }
        return count
    }

    /// Deletes the rows of these stored keys, in key order (neighbouring
    /// keys share pages), each key added to `removed`.
    package func deleteRows(_ keys: PackedByteStrings, from tables: ViewIndexTables, transaction: LMDBTransaction,
                            removed: inout [[UInt8]]?) throws {
        guard !keys.ends.isEmpty else { return }
        try keys.bytes.withUnsafeBytes { bytes in
            func key(_ index: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[keys.range(index)]) }
            let order = keys.ends.indices.sorted { compareBytes(key($0), key($1)) < 0 }
            try transaction.withCursor(tables.rows) { cursor in
                for index in order {
                    if try cursor.find(key(index)) != nil { try cursor.deleteCurrent() }
                    removed?.append(Array(key(index)))
                }
            }
        }
    }

    /// Adds the stored keys of the rows a back-index entry lists to `keys`; returns how many.
    private static func appendStoredKeys(inBackEntry entry: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer,
                                         to keys: inout PackedByteStrings) throws -> Int {
        var count = 0
        var scratch: [UInt8] = []
        try IndexRow.forEachStoredKey(inBackEntry: entry, id: id, scratch: &scratch) { key in
            keys.append(key)
            count += 1
        }
        return count
    }

    private static func makeBackEntry(keys: [UnsafeRawBufferPointer], values: [UnsafeRawBufferPointer], in entry: inout [UInt8]) throws {
        entry.removeAll(keepingCapacity: true)
        for (key, value) in zip(keys, values) {
            try IndexRow(storedKey: key, value: value).appendBackEntry(to: &entry)
        }
    }

    /// Bytes the index's tables take.
    package func bytes(of tables: ViewIndexTables, in transaction: LMDBTransaction) throws -> Int {
        try transaction.bytes(tables.rows) + transaction.bytes(tables.back)
    }
}
