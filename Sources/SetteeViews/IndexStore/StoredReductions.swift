import Foundation
import SetteeCore
@_spi(LMDB) package import SetteeStorage

extension Reducer {
    /// Whether partials are cheap enough to compute while holding the
    /// database's one writer lock (the native built-ins). Other partials
    /// (JavaScript, which may run up to its timeout) are computed on a read
    /// snapshot, outside every write: see ``StoredReductions/computeChanged(_:from:)``.
    package var isQuick: Bool { !isJavaScript }
}

/// Partial reductions of fixed chunks of an index's rows, kept next to the rows
/// so that a reduce (or a row count) over any key range costs the rows at its
/// two ends plus the stored partials in between — not the row count.
///
/// Chunks are cut where the content says, not where the row count says: a row
/// whose stored key hashes to five low zero bits ends a level-1 chunk (about 32
/// rows), four more zero bits end a level-2 chunk (about 16 level-1 chunks), and
/// so on up to level ``maximumLevel``. A row's place among the boundaries never
/// depends on the other rows, so a changed row touches only the chunks that hold
/// it (one per level), and the same rows always give the same chunks. Rows whose
/// stored key is a long-key prefix (``IndexRow``) never end a chunk, so a group
/// of them always lies inside one chunk.
///
/// The table `chunks:<signature>` maps `u8 level ‖ boundary stored key` to the
/// chunk of rows after the previous boundary of that level up to and including
/// this one; `u8 level ‖ 0xFF` (above every stored key) holds the rows after
/// the level's last boundary. A level-`L` chunk is the union of the level-`L-1`
/// chunks that end inside it; its reduction is their rereduction.
package struct StoredReductions {
    package static let maximumLevel = 5
    /// The key part of each level's last chunk: above every stored key, whose
    /// first byte is a collation tag.
    package static let tailKey: [UInt8] = [0xFF]

    package let rows: LMDBTable
    package let chunks: LMDBTable
    /// The view's reduce function, handed to the chunks as CouchDB hands its
    /// reduce fun to its B-tree (a JavaScript one runs on the function workers
    /// the reducer was given); nil when only row counts are kept (map-only
    /// views, and `_approx_count_distinct`, whose partials are too large to
    /// store every 32 rows).
    package let reducer: Reducer?

    /// Whether chunk partials may be kept up inside the write that changes the
    /// rows (no reducer, or a quick one); otherwise see ``markBoundaries(changed:in:)``.
    package var updatesInWrite: Bool { reducer?.isQuick ?? true }

    /// The highest level whose chunks `storedKey` ends (0: none).
    package static func height(of storedKey: UnsafeRawBufferPointer) -> Int {
        guard storedKey.count < IndexRow.prefixLength else { return 0 }
        let hash = XXHash64.hash(storedKey, seed: 0x5E77_EE00)
        guard hash & 31 == 0 else { return 0 }
        var height = 1
        var rest = hash >> 5
        while height < maximumLevel && rest & 15 == 0 {
            height += 1
            rest >>= 4
        }
        return height
    }

    package static func height(of storedKey: [UInt8]) -> Int {
        storedKey.withUnsafeBytes { height(of: $0) }
    }

    package static func entryKey(level: Int, _ part: UnsafeRawBufferPointer) -> [UInt8] {
        var key = [UInt8(level)]
        key.append(contentsOf: part)
        return key
    }

    package static func entryKey(level: Int, _ part: [UInt8]) -> [UInt8] {
        [UInt8(level)] + part
    }

    // MARK: Building everything

    /// Recomputes every chunk from the rows, in one pass (which lets go of the
    /// rows' pages of the memory map as it goes: see
    /// ``LMDBEnvironment/releaseMappedPages()``). Level-1 chunks are finished
    /// in batches, so that a JavaScript reduce makes its calls a batch at a
    /// time on a worker rather than one turn per chunk.
    package func rebuild(in transaction: LMDBTransaction) throws {
        try transaction.clear(chunks)
        try computeChunks(from: transaction) { try transaction.put(chunks, $0, $1) }
    }

    /// Computes every chunk from the rows `transaction` sees (a read
    /// transaction will do), handing each entry's key and value to `emit`.
    ///
    /// The rows are scanned on the calling thread, which closes level-1 chunks
    /// as their boundaries pass. Their reductions are made a batch at a time
    /// (one worker turn for a JavaScript reducer), and the levels above are
    /// built from them. With a JavaScript reducer that happens one batch behind
    /// the scan, on a thread of its own, so that the scan and the JavaScript
    /// calls overlap.
    package func computeChunks(from transaction: LMDBTransaction, _ emit: (_ key: [UInt8], _ value: [UInt8]) throws -> Void) throws {
        var count = 0
        try transaction.withCursor(rows) { cursor in
            var started = false
            try computeChunks(nextRow: {
                count += 1
                if count & 0x3FFF == 0 { transaction.environment.releaseMappedPages() }
                defer { started = true }
                return try started ? cursor.next() : cursor.first()
            }, emit)
        }
    }

    /// Computes every chunk from the rows `nextRow` returns, one per call
    /// (nil after the last), in stored-key order: the index's rows, wherever
    /// they come from.
    package func computeChunks(nextRow: () throws -> LMDBCursor.Entry?, _ emit: (_ key: [UInt8], _ value: [UInt8]) throws -> Void) throws {
        var rowChunk = ChunkBuilder(reducer: reducer)
        var closed: [ClosedChunk] = []
        var levels = UpperLevels(reducer: reducer)
        let behind = reducer?.isQuick == false ? BackgroundJob<(UpperLevels, [Entry])>(label: "settee.chunks") : nil
        // Never return (or throw) while a batch is still being reduced.
        defer { if let behind, behind.isBusy { _ = try? behind.wait() } }
        func emitFinished() throws {
            guard let behind, behind.isBusy else { return }
            let (upper, entries) = try behind.wait()
            levels = upper
            for entry in entries { try emit(entry.key, entry.value) }
        }
        func hand(last: Bool) throws {
            let chunks = closed
            closed = []
            closed.reserveCapacity(Self.closedBatch)
            guard let behind else {
                for entry in try levels.finish(chunks, last: last) { try emit(entry.key, entry.value) }
                return
            }
            try emitFinished()
            behind.start { [levels] in
                var upper = levels
                let entries = try upper.finish(chunks, last: last)
                return (upper, entries)
            }
            if last { try emitFinished() }
        }
        while let (key, value) = try nextRow() {
            try rowChunk.add(row: try IndexRow(storedKey: key, value: value))
            let height = Self.height(of: key)
            if height > 0 {
                closed.append(ClosedChunk(builder: rowChunk, part: Array(key), height: height))
                rowChunk = ChunkBuilder(reducer: reducer)
                if closed.count >= Self.closedBatch { try hand(last: false) }
            }
        }
        closed.append(ClosedChunk(builder: rowChunk, part: Self.tailKey, height: StoredChunk.tailHeight))
        try hand(last: true)
    }

    /// Level-1 chunks whose reductions are made in one turn.
    private static let closedBatch = 512

    /// A chunk entry: its key in the chunks table and its stored value.
    package typealias Entry = (key: [UInt8], value: [UInt8])

    /// A level-1 chunk whose boundary has passed: its rows, its boundary's
    /// stored key (the tail's key for the last) and the boundary's height.
    private struct ClosedChunk: Sendable {
        var builder: ChunkBuilder
        var part: [UInt8]
        var height: Int
    }

    /// The chunks of levels 2 and up being built, from level-1 chunks in order.
    private struct UpperLevels: Sendable {
        private var builders: [ChunkBuilder]
        private let reducer: Reducer?

        init(reducer: Reducer?) {
            self.reducer = reducer
            builders = (0...StoredReductions.maximumLevel).map { _ in ChunkBuilder(reducer: reducer) }
        }

        /// Finishes these level-1 chunks (their reductions made together) and
        /// every chunk above that their boundaries close; after the last, the
        /// tails of all levels. Returns the entries, in order.
        mutating func finish(_ chunks: [ClosedChunk], last: Bool) throws -> [Entry] {
            var entries: [Entry] = []
            let inputs = chunks.compactMap(\.builder.pendingReduction)
            var results = try reducer.map { try $0.partials(inputs) }?.makeIterator()
            for chunk in chunks {
                let reduction = chunk.builder.pendingReduction == nil ? nil : results?.next()
                let value = try chunk.builder.finish(height: chunk.height, reduction: reduction)
                entries.append((StoredReductions.entryKey(level: 1, chunk.part), value))
                try value.withUnsafeBytes { try builders[2].add(chunk: try StoredChunk(value: $0)) }
                if chunk.height != StoredChunk.tailHeight && chunk.height > 1 {
                    for level in 2...chunk.height { try close(level, at: chunk.part, height: chunk.height, into: &entries) }
                }
            }
            if last {
                for level in 2...StoredReductions.maximumLevel {
                    try close(level, at: StoredReductions.tailKey, height: StoredChunk.tailHeight, into: &entries)
                }
            }
            return entries
        }

        private mutating func close(_ level: Int, at part: [UInt8], height: Int, into entries: inout [Entry]) throws {
            let value = try builders[level].finish(height: height)
            entries.append((StoredReductions.entryKey(level: level, part), value))
            if level < StoredReductions.maximumLevel {
                try value.withUnsafeBytes { try builders[level + 1].add(chunk: try StoredChunk(value: $0)) }
            }
            builders[level] = ChunkBuilder(reducer: reducer)
        }
    }

    // MARK: Incremental upkeep

    /// Brings the chunks up to date after the rows with these stored keys were
    /// written or removed (in this transaction): boundaries come and go with
    /// their rows, and every chunk holding a changed row — at every level — is
    /// recomputed from its rows or sub-chunks. Only for ``updatesInWrite``:
    /// a slow reducer's partials are computed outside the write instead
    /// (``markBoundaries(changed:in:)``, then ``computeChanged(_:from:)``).
    package func update(changed: [[UInt8]], in transaction: LMDBTransaction) throws {
        guard let changed = try markBoundaries(changed: changed, in: transaction) else { return }
        try transaction.withCursor(chunks) { cursor in
            try transaction.withCursor(rows) { rowCursor in
                try forEachDirtyLevel(changed, cursor: cursor) { level, dirty in
                    for part in dirty {
                        guard var chunk = try gather(level: level, part: part, cursor: cursor, rowCursor: rowCursor, computed: [:]) else { continue }
                        try transaction.put(chunks, Self.entryKey(level: level, part), try chunk.builder.finish(height: chunk.height))
                    }
                }
            }
        }
    }

    /// The changed keys, deduplicated and in order, with their heights.
    package struct ChangedKeys: Sendable {
        package var keys: [[UInt8]]
        package var heights: [Int]

        package init(_ changed: some Sequence<[UInt8]>) {
            keys = Array(Set(changed)).sorted { $0.lexicographicallyPrecedes($1) }
            heights = keys.map { StoredReductions.height(of: $0) }
        }
    }

    /// The part of ``update(changed:in:)`` that needs no reducer: each level's
    /// tail exists, and boundaries follow their rows (a new one gets an empty
    /// placeholder). The chunks holding changed rows are left as they were,
    /// to be recomputed (``computeChanged(_:from:)``): until then the index
    /// state must say its chunks are not current, so that no query reads them.
    /// Returns the changed keys (nil when there are none).
    @discardableResult
    package func markBoundaries(changed: [[UInt8]], in transaction: LMDBTransaction) throws -> ChangedKeys? {
        guard !changed.isEmpty else { return nil }
        let changed = ChangedKeys(changed)
        for level in 1...Self.maximumLevel where try transaction.get(chunks, Self.entryKey(level: level, Self.tailKey)) == nil {
            try transaction.put(chunks, Self.entryKey(level: level, Self.tailKey), ChunkBuilder.empty(height: StoredChunk.tailHeight))
        }
        // Boundaries follow their rows; new ones get a placeholder, recomputed below.
        for (key, height) in zip(changed.keys, changed.heights) where height > 0 {
            let exists = try transaction.get(rows, key) != nil
            for level in 1...height {
                let entryKey = Self.entryKey(level: level, key)
                if exists {
                    if try transaction.get(chunks, entryKey) == nil {
                        try transaction.put(chunks, entryKey, ChunkBuilder.empty(height: height))
                    }
                } else {
                    _ = try transaction.delete(chunks, entryKey)
                }
            }
        }
        return changed
    }

    /// The entries of every chunk (at every level) holding a row with one of
    /// these keys, computed from the rows and chunks `transaction` sees — a
    /// read snapshot taken after ``markBoundaries(changed:in:)`` committed —
    /// with the reducer's calls made a level at a time (a few worker turns).
    /// The entries are to be put in a write that first checks the index is
    /// still as this snapshot saw it.
    package func computeChanged(_ changed: ChangedKeys, from transaction: LMDBTransaction) throws -> [Entry] {
        var entries: [Entry] = []
        // The entries computed so far, which stand for their stored (stale) values.
        var computed: [[UInt8]: [UInt8]] = [:]
        try transaction.withCursor(chunks) { cursor in
            try transaction.withCursor(rows) { rowCursor in
                try forEachDirtyLevel(changed, cursor: cursor) { level, dirty in
                    var gathered: [(key: [UInt8], builder: ChunkBuilder, height: Int)] = []
                    for part in dirty.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                        guard let chunk = try gather(level: level, part: part, cursor: cursor, rowCursor: rowCursor, computed: computed) else { continue }
                        gathered.append((Self.entryKey(level: level, part), chunk.builder, chunk.height))
                    }
                    let inputs = gathered.compactMap(\.builder.pendingReduction)
                    var results = try reducer.map { try $0.partials(inputs) }?.makeIterator()
                    for chunk in gathered {
                        let reduction = chunk.builder.pendingReduction == nil ? nil : results?.next()
                        let value = try chunk.builder.finish(height: chunk.height, reduction: reduction)
                        computed[chunk.key] = value
                        entries.append((chunk.key, value))
                    }
                }
            }
        }
        return entries
    }

    /// Calls `body` with each level's chunks (key parts) that hold a changed
    /// row, level 1 first: a level-`L` chunk holds one when it holds a changed
    /// level-`L-1` chunk, or follows a changed boundary of its level.
    private func forEachDirtyLevel(_ changed: ChangedKeys, cursor: LMDBCursor, _ body: (_ level: Int, _ dirty: Set<[UInt8]>) throws -> Void) throws {
        var dirty = Set<[UInt8]>()
        for (key, height) in zip(changed.keys, changed.heights) {
            dirty.insert(try Self.chunkPart(level: 1, atOrAfter: key, cursor: cursor))
            if height > 0 { dirty.insert(try Self.chunkPart(level: 1, after: key, cursor: cursor)) }
        }
        for level in 1...Self.maximumLevel {
            if level > 1 {
                var above = Set<[UInt8]>()
                for part in dirty { above.insert(try Self.chunkPart(level: level, atOrAfter: part, cursor: cursor)) }
                for (key, height) in zip(changed.keys, changed.heights) where height >= level {
                    above.insert(try Self.chunkPart(level: level, after: key, cursor: cursor))
                }
                dirty = above
            }
            try body(level, dirty)
        }
    }

    /// The key part of the level's first chunk whose key part is at or after `key` (the tail's at worst).
    private static func chunkPart(level: Int, atOrAfter key: [UInt8], cursor: LMDBCursor) throws -> [UInt8] {
        guard let entry = try cursor.seek(atOrAfter: entryKey(level: level, key)), entry.key.first == UInt8(level) else { return tailKey }
        return Array(entry.key.dropFirst())
    }

    /// The key part of the level's first chunk whose key part is after `key`.
    private static func chunkPart(level: Int, after key: [UInt8], cursor: LMDBCursor) throws -> [UInt8] {
        var entryKey: [UInt8] = []
        guard let entry = try chunk(level: level, after: key, cursor: cursor, key: &entryKey) else { return tailKey }
        return Array(entry.key.dropFirst())
    }

    /// The level's first chunk whose key part is after `boundary` (the level's
    /// first chunk when nil), or nil past the level's last.
    /// `key` is room for the entry key sought (reused across calls by a caller that seeks often).
    package static func chunk(level: Int, after boundary: [UInt8]?, cursor: LMDBCursor, key: inout [UInt8]) throws -> LMDBCursor.Entry? {
        key.removeAll(keepingCapacity: true)
        key.append(UInt8(level))
        if let boundary { key.append(contentsOf: boundary) }
        var entry = try cursor.seek(atOrAfter: key)
        if boundary != nil, let found = entry, compareBytes(found.key, key) == 0 { entry = try cursor.next() }
        guard let entry, entry.key.first == UInt8(level) else { return nil }
        return entry
    }

    /// Gathers one chunk from what lies between the previous boundary of its
    /// level and its own: rows for level 1, chunks of the level below
    /// otherwise (those in `computed`, by entry key, instead of their stored
    /// values). Nil when the chunk does not exist.
    private func gather(level: Int, part: [UInt8], cursor: LMDBCursor, rowCursor: LMDBCursor,
                        computed: [[UInt8]: [UInt8]]) throws -> (builder: ChunkBuilder, height: Int)? {
        let key = Self.entryKey(level: level, part)
        guard let current = try cursor.seek(atOrAfter: key), current.key.elementsEqual(key) else { return nil }
        let height = try StoredChunk(value: current.value).height
        var previous: [UInt8]?
        if let before = try cursor.previous(), before.key.first == UInt8(level) {
            previous = Array(before.key.dropFirst())
        }
        var builder = ChunkBuilder(reducer: reducer)
        if level == 1 {
            var entry = try previous.map { previous in
                var after = previous
                after.append(0)
                return try rowCursor.seek(atOrAfter: after)
            } ?? rowCursor.first()
            while let (rowKey, value) = entry, compareBytes(rowKey, part) <= 0 {
                try builder.add(row: try IndexRow(storedKey: rowKey, value: value))
                entry = try rowCursor.next()
            }
        } else {
            var entry = try cursor.seek(atOrAfter: Self.entryKey(level: level - 1, previous.map { $0 + [0] } ?? []))
            while let (childKey, value) = entry, childKey.first == UInt8(level - 1),
                  compareBytes(UnsafeRawBufferPointer(rebasing: childKey.dropFirst()), part) <= 0 {
                if !computed.isEmpty, let replaced = computed[Array(childKey)] {
                    try replaced.withUnsafeBytes { try builder.add(chunk: try StoredChunk(value: $0)) }
                } else {
                    try builder.add(chunk: try StoredChunk(value: value))
                }
                entry = try cursor.next()
            }
        }
        return (builder, height)
    }
}

/// One stored chunk, read in place from its LMDB value:
/// `u8 flags ‖ u8 height ‖ u64 rows ‖ u32 first-key length ‖ u32 last-key
/// length ‖ first encoded key ‖ last encoded key ‖ reduction`. The reduction is
/// the reduce function's partial as JSON text, or (flag `error`) the error that
/// computing it raised, as `{"error": …, "reason": …}`.
package struct StoredChunk {
    package static let hasReduction: UInt8 = 1
    package static let isError: UInt8 = 2
    /// The height stored for a level's last chunk.
    package static let tailHeight = 0xFF
    package static let headerSize = 18

    package let value: UnsafeRawBufferPointer

    /// A stored chunk, its layout checked before anything is read from it:
    /// one shorter than its header or its keys' lengths is damage.
    package init(value: UnsafeRawBufferPointer) throws(StorageError) {
        self.value = value
        guard value.count >= Self.headerSize, firstLength <= value.count - Self.headerSize,
              lastLength <= value.count - Self.headerSize - firstLength else {
            throw StorageError.damaged("reading a stored reduction of a view index",
                               explanation: "the database is damaged: a view index's stored chunk is \(value.count) bytes, shorter than its header and keys")
        }
    }

    package var flags: UInt8 { value[0] }
    /// The highest level whose boundary this chunk's key is (``tailHeight`` for a tail).
    package var height: Int { Int(value[1]) }
    package var isTail: Bool { height == Self.tailHeight }
    package var rowCount: Int { Int(value.loadUnaligned(fromByteOffset: 2, as: UInt64.self)) }
    private var firstLength: Int { Int(value.loadUnaligned(fromByteOffset: 10, as: UInt32.self)) }
    private var lastLength: Int { Int(value.loadUnaligned(fromByteOffset: 14, as: UInt32.self)) }

    /// The encoded key (collation of the emitted key) of the chunk's first and last rows.
    package var firstEncodedKey: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: value[Self.headerSize..<Self.headerSize + firstLength])
    }

    package var lastEncodedKey: UnsafeRawBufferPointer {
        let start = Self.headerSize + firstLength
        return UnsafeRawBufferPointer(rebasing: value[start..<start + lastLength])
    }

    /// The partial reduction (JSON text) or error, when the chunk has one.
    package var reduction: UnsafeRawBufferPointer? {
        guard flags & (Self.hasReduction | Self.isError) != 0 else { return nil }
        return UnsafeRawBufferPointer(rebasing: value[(Self.headerSize + firstLength + lastLength)...])
    }

    /// The error computing the reduction raised, thrown as the query would have.
    package func reductionError() -> (any Error)? {
        guard flags & Self.isError != 0, let text = reduction, let json = try? JSONParser.parse(text) else { return nil }
        let error = json["error"]?.stringValue ?? "reduce_error"
        let reason = json["reason"]?.stringValue ?? ""
        if json["javascript"] == true, let kind = JavaScriptError.Kind.allCases.first(where: { $0.label == error }) {
            return JavaScriptError(kind: kind, message: reason)
        }
        return QueryError(error: error, reason: reason)
    }
}

/// Gathers the rows or sub-chunks of one chunk and makes its stored value.
package struct ChunkBuilder: Sendable {
    private let reducer: Reducer?
    private var accumulator: Reducer.Accumulator?
    private var rowCount = 0
    private var first: [UInt8]?
    private var last: [UInt8] = []
    /// The first error among the sub-chunks, which the whole chunk then carries.
    private var error: [UInt8]?

    package init(reducer: Reducer?) {
        self.reducer = reducer
        accumulator = reducer?.makeAccumulator()
    }

    private mutating func extend(first chunkFirst: UnsafeRawBufferPointer, last chunkLast: UnsafeRawBufferPointer) {
        // Stored order is key order except inside groups of long keys: keep the extremes.
        if first == nil || compareBytes(chunkFirst, first!) < 0 { first = Array(chunkFirst) }
        if rowCount == 0 || compareBytes(chunkLast, last) >= 0 {
            last.removeAll(keepingCapacity: true)
            last.append(contentsOf: chunkLast)
        }
    }

    package mutating func add(row: IndexRow) throws {
        let encodedKey = row.encodedKey
        extend(first: encodedKey, last: encodedKey)
        rowCount += 1
        guard reducer != nil, error == nil else { return }
        do {
            try reducer!.add(row: row, to: &accumulator!)
        } catch {
            self.error = try Self.errorJSON(error)
        }
    }

    package mutating func add(chunk: StoredChunk) throws {
        guard chunk.rowCount > 0 else { return }
        extend(first: chunk.firstEncodedKey, last: chunk.lastEncodedKey)
        rowCount += chunk.rowCount
        guard let reducer, error == nil, let reduction = chunk.reduction else { return }
        if chunk.flags & StoredChunk.isError != 0 {
            error = Array(reduction)
            return
        }
        do {
            try reducer.add(partial: reduction, rows: chunk.rowCount, to: &accumulator!)
        } catch {
            self.error = try Self.errorJSON(error)
        }
    }

    /// The value of a chunk of no rows: a placeholder until it is recomputed.
    package static func empty(height: Int) throws -> [UInt8] {
        var builder = ChunkBuilder(reducer: nil)
        return try builder.finish(height: height)
    }

    /// The stored value, with the partial reduction computed now.
    package mutating func finish(height: Int) throws -> [UInt8] {
        let reduction = pendingReduction.map { _ in Result { try reducer!.partial(&accumulator!) } }
        return try finish(height: height, reduction: reduction)
    }

    /// What a partial reduction is still to be computed from (nil: none is
    /// needed — no reducer, no rows, or an error already).
    package var pendingReduction: Reducer.Accumulator? {
        reducer != nil && error == nil && rowCount > 0 ? accumulator : nil
    }

    /// The stored value, with the partial reduction of ``pendingReduction``
    /// computed elsewhere (nil when there is none to compute).
    package func finish(height: Int, reduction partial: Result<String, any Error>?) throws -> [UInt8] {
        var flags: UInt8 = 0
        var reduction: [UInt8] = []
        if let error {
            flags = StoredChunk.isError
            reduction = error
        } else if let partial {
            do {
                reduction = Array(try partial.get().utf8)
                flags = StoredChunk.hasReduction
            } catch {
                flags = StoredChunk.isError
                reduction = try Self.errorJSON(error)
            }
        }
        let first = first ?? []
        var out: [UInt8] = [flags, UInt8(height)]
        out.reserveCapacity(StoredChunk.headerSize + first.count + last.count + reduction.count)
        withUnsafeBytes(of: UInt64(rowCount)) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(first.count)) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(last.count)) { out.append(contentsOf: $0) }
        out.append(contentsOf: first)
        out.append(contentsOf: last)
        out.append(contentsOf: reduction)
        return out
    }

    /// A reduce failure, stored so that queries reading the chunk fail as a walk would.
    private static func errorJSON(_ error: any Error) throws -> [UInt8] {
        let json: JSONValue
        switch error {
        case let error as QueryError:
            json = ["error": .string(error.error), "reason": .string(error.reason)]
        // The engine's failure says nothing of the rows: the pass fails instead,
        // and the chunk is computed again by the next one.
        case let error as JavaScriptError where !error.kind.isEngineFailure:
            json = ["error": .string(error.kind.label), "reason": .string(error.message), "javascript": true]
        default:
            throw error
        }
        return Array(json.jsonText.utf8)
    }
}
