import Foundation
import SetteeCore
@_spi(LMDB) package import SetteeStorage

/// Walks an index's rows in full-key order (either direction) within a range,
/// sorting the rare groups of long keys that share a stored prefix (see
/// ``IndexRow``). Rows point into the memory map: valid during the transaction.
///
/// With the index's ``StoredReductions`` (when they are current), a fold hands
/// over whole chunks that lie inside the range instead of their rows, so counts
/// and reductions over long ranges read a few stored partials.
package struct IndexScanner {
    package let transaction: LMDBTransaction
    /// The rows table; nil when the index has no rows in this snapshot (no
    /// state): nothing is read then.
    package let rows: LMDBTable?
    /// The index's chunk table, when its chunks reflect the rows.
    package var chunks: LMDBTable?

    /// What a fold hands over: a row, or a stored chunk of rows.
    package enum Item {
        case row(IndexRow)
        /// A chunk, with the key part of its entry: its last row's stored key (``StoredReductions/tailKey`` for a level's last chunk).
        case chunk(StoredChunk, boundary: UnsafeRawBufferPointer)
    }

    /// The last row of the chunk whose entry's key part is `boundary`.
    package func lastRow(ofChunk boundary: UnsafeRawBufferPointer) throws -> IndexRow? {
        guard let rows else { return nil }
        if boundary.elementsEqual(StoredReductions.tailKey) {
            return try transaction.withCursor(rows) { cursor in try cursor.last().map { try IndexRow(storedKey: $0.key, value: $0.value) } }
        }
        return try transaction.get(rows, boundary).map { try IndexRow(storedKey: boundary, value: $0) }
    }

    /// The first row of `range` after the stored key `previous` (nil: the range's first
    /// row): where a chunk an ascending fold hands over after `previous` begins.
    package func firstRow(after previous: UnsafeRawBufferPointer?, in range: IndexRange) throws -> IndexRow? {
        guard let rows else { return nil }
        return try transaction.withCursor(rows) { cursor in
            var entry: LMDBCursor.Entry?
            if let previous {
                entry = try cursor.seek(atOrAfter: Array(previous) + [0])
            } else if let lower = range.lower {
                entry = try cursor.seek(atOrAfter: Array(lower.bytes.prefix(IndexRow.prefixLength)))
            } else {
                entry = try cursor.first()
            }
            while let current = entry {
                let row = try IndexRow(storedKey: current.key, value: current.value)
                if range.isAboveLower(row.fullKey) { return row }
                entry = try cursor.next()
            }
            return nil
        }
    }

    /// Calls `body` for each row in `range`, ascending or descending, until it returns false.
    package func scan(_ range: IndexRange, descending: Bool, _ body: (IndexRow) throws -> Bool) throws {
        try fold(range, descending: descending, chunksWhere: nil) { item in
            guard case .row(let row) = item else { return true }
            return try body(row)
        }
    }

    /// Calls `body` for each row in `range`, ascending, until it returns false,
    /// walking there from just after `boundary` (a stored key below the range;
    /// nil: from the index's first row). Returns the rows it passed before the
    /// range: one walk both counts them (a query's `offset`) and reaches the
    /// range's rows, where counting first and then scanning would descend the
    /// B-tree twice.
    package func scan(_ range: IndexRange, countingAfter boundary: [UInt8]?, _ body: (IndexRow) throws -> Bool) throws -> Int {
        guard let rows else { return 0 }
        return try transaction.withCursor(rows) { cursor in
            try foldAscending(range, rowCursor: cursor, chunks: nil, after: boundary.map { ($0, 0) }, fromFirstRow: true) { item in
                guard case .row(let row) = item else { return true }
                return try body(row)
            }
        }
    }

    /// Calls `body` for the rows in `range` in order, handing over instead a
    /// whole stored chunk wherever one lies inside the range and `accept` takes
    /// it (nil: rows only). Stops when `body` returns false.
    ///
    /// An ascending fold over a range open below may instead begin after
    /// `start.boundary`, a boundary of a level above `start.height` whose next
    /// chunk of that level reaches past the range, the rows up to it counted by
    /// the caller (see ``ChunkCounts``): it goes on with chunks of
    /// `start.height` and below.
    package func fold(_ range: IndexRange, descending: Bool, chunksWhere accept: ((StoredChunk) throws -> Bool)?,
              after start: (boundary: [UInt8], height: Int)? = nil, _ body: (Item) throws -> Bool) throws {
        precondition(start == nil || (!descending && range.lower == nil && chunks != nil && accept != nil))
        guard let rows else { return }
        try transaction.withCursor(rows) { rowCursor in
            guard let chunks, let accept else {
                if descending {
                    try foldDescending(range, rowCursor: rowCursor, chunks: nil, body)
                } else {
                    try foldAscending(range, rowCursor: rowCursor, chunks: nil, after: nil, body)
                }
                return
            }
            try transaction.withCursor(chunks) { chunkCursor in
                let skipping = ChunkSkipping(cursor: chunkCursor, accept: accept)
                if descending {
                    try foldDescending(range, rowCursor: rowCursor, chunks: skipping, body)
                } else {
                    try foldAscending(range, rowCursor: rowCursor, chunks: skipping, after: start, body)
                }
            }
        }
    }

    private struct ChunkSkipping {
        let cursor: LMDBCursor
        let accept: (StoredChunk) throws -> Bool
        /// Chunks above this level reach past the range: no later one can fit.
        var usefulLevel = StoredReductions.maximumLevel
        /// The level of the chunk the cursor is on, when it is the last one handed over.
        var currentLevel: Int?

        /// Room for the entry key sought (a fold seeks once per level).
        var key: [UInt8] = []

        /// The level's first chunk after `boundary` (from the index's start when nil).
        mutating func chunk(level: Int, after boundary: [UInt8]?) throws -> LMDBCursor.Entry? {
            defer { currentLevel = nil }
            guard currentLevel == level, boundary != nil else {
                return try StoredReductions.chunk(level: level, after: boundary, cursor: cursor, key: &key)
            }
            // The cursor is on the chunk that ended at `boundary`: the next is one step on.
            guard let entry = try cursor.next(), entry.key.first == UInt8(level) else { return nil }
            return entry
        }
    }

    /// An ascending fold (see ``fold(_:descending:chunksWhere:after:_:)``).
    /// With `fromFirstRow`, it walks from the index's first row (or `start`)
    /// even when the range has a lower bound, and returns the rows it passed
    /// below that bound.
    @discardableResult
    private func foldAscending(_ range: IndexRange, rowCursor cursor: LMDBCursor, chunks: ChunkSkipping?,
                               after start: (boundary: [UInt8], height: Int)?, fromFirstRow: Bool = false,
                               _ body: (Item) throws -> Bool) throws -> Int {
        var chunks = chunks
        var entry: LMDBCursor.Entry?
        var below = 0
        if let lower = range.lower, !fromFirstRow {
            entry = try cursor.seek(atOrAfter: Array(lower.bytes.prefix(IndexRow.prefixLength)))
        } else if start == nil {
            entry = try cursor.first()
        }
        // The last chunk boundary passed and its height; the index's start is a boundary of every level.
        // Its bytes are reused from boundary to boundary.
        var boundary: [UInt8]? = start?.boundary
        func pass(_ key: UnsafeRawBufferPointer) {
            if boundary == nil { boundary = [] }
            boundary!.removeAll(keepingCapacity: true)
            boundary!.append(contentsOf: key)
        }
        var height = start?.height ?? (range.lower == nil ? StoredReductions.maximumLevel : 0)
        if let start { chunks?.usefulLevel = start.height }
        // After chunks were handed over, the row cursor is moved only when rows are needed again.
        var rowsBehind = start != nil
        while true {
            if chunks != nil && height > 0 {
                var skipped = false
                for level in stride(from: min(height, chunks!.usefulLevel), through: 1, by: -1) {
                    guard let (key, value) = try chunks!.chunk(level: level, after: boundary) else { break }
                    let chunk = try StoredChunk(value: value)
                    let part = UnsafeRawBufferPointer(rebasing: key.dropFirst())
                    guard chunk.isTail ? range.upper == nil : range.isBelowUpper(part) else {
                        chunks!.usefulLevel = level - 1
                        continue
                    }
                    guard try chunks!.accept(chunk) else { continue }
                    if chunk.rowCount > 0, try !body(.chunk(chunk, boundary: part)) { return below }
                    if chunk.isTail { return below }
                    chunks!.currentLevel = level
                    pass(part)
                    height = chunk.height
                    skipped = true
                    break
                }
                if skipped {
                    rowsBehind = true
                    continue
                }
                height = 0
            }
            if rowsBehind {
                boundary!.append(0)
                entry = try cursor.seek(atOrAfter: boundary!)
                boundary!.removeLast()
                rowsBehind = false
            }
            guard let current = entry else { return below }
            // A short stored key is the full key: rows below the range are passed without decoding them.
            if current.key.count < IndexRow.prefixLength, !range.isAboveLower(current.key) {
                below += 1
                entry = try cursor.next()
                continue
            }
            let row = try IndexRow(storedKey: current.key, value: current.value)
            if row.isInPrefixGroup {
                let group = try Self.prefixGroup(startingWith: row, entry: &entry, step: cursor.next, descending: false)
                for member in group {
                    guard range.isAboveLower(member.fullKey) else {
                        below += 1
                        continue
                    }
                    guard range.isBelowUpper(member.fullKey) else { return below }
                    if try !body(.row(member)) { return below }
                }
                continue
            }
            // A row outside a group has a short key, above the lower bound (see above).
            guard range.isBelowUpper(row.fullKey) else { return below }
            if try !body(.row(row)) { return below }
            // Only while some level's chunks can still fit does a row's height matter.
            if (chunks?.usefulLevel ?? 0) > 0 {
                height = StoredReductions.height(of: current.key)
                if height > 0 { pass(current.key) }
            }
            entry = try cursor.next()
        }
    }

    private func foldDescending(_ range: IndexRange, rowCursor cursor: LMDBCursor, chunks: ChunkSkipping?,
                                _ body: (Item) throws -> Bool) throws {
        var chunks = chunks
        var entry: LMDBCursor.Entry?
        if let upper = range.upper {
            // Land past every row that could be at or below the bound, then walk back.
            var seekKey = Array(upper.bytes.prefix(IndexRow.prefixLength))
            if upper.bytes.count >= IndexRow.prefixLength { seekKey += [UInt8](repeating: 0xFF, count: 32) }
            entry = try cursor.seek(atOrAfter: seekKey)
            entry = entry == nil ? try cursor.last() : entry
        } else {
            entry = try cursor.last()
        }
        // At the index's end, each level's last chunk comes first.
        var atEnd = range.upper == nil
        while true {
            if chunks != nil {
                // The boundary the next row (or the end) is, and its height.
                var boundary: [UInt8]?
                var height = 0
                let wasAtEnd = atEnd
                if atEnd {
                    boundary = StoredReductions.tailKey
                    height = StoredReductions.maximumLevel
                    atEnd = false
                } else if let current = entry, current.key.count < IndexRow.prefixLength,
                          range.isBelowUpper(current.key), range.isAboveLower(current.key) {
                    height = StoredReductions.height(of: current.key)
                    if height > 0 { boundary = Array(current.key) }
                }
                if let boundary {
                    var skipped = false
                    for level in stride(from: min(height, chunks!.usefulLevel), through: 1, by: -1) {
                        let key = StoredReductions.entryKey(level: level, boundary)
                        guard let (found, value) = try chunks!.cursor.seek(atOrAfter: key), compareBytes(found, key) == 0 else { break }
                        let chunk = try StoredChunk(value: value)
                        var previous: [UInt8]?
                        if let before = try chunks!.cursor.previous(), before.key.first == UInt8(level) {
                            previous = Array(before.key.dropFirst())
                        }
                        // The chunk holds the rows after `previous`: inside when `previous` is.
                        let inside = if let previous { range.lower.map { lower in previous.withUnsafeBytes { compareBytes($0, lower.bytes) >= 0 } } ?? true } else { range.lower == nil }
                        guard inside else {
                            chunks!.usefulLevel = level - 1
                            continue
                        }
                        guard try chunks!.accept(chunk) else { continue }
                        if chunk.rowCount > 0, try !body(.chunk(chunk, boundary: UnsafeRawBufferPointer(rebasing: found.dropFirst()))) { return }
                        guard let previous else { return }
                        entry = try cursor.seek(atOrAfter: previous)
                        skipped = true
                        break
                    }
                    // Past the end's chunks, the last row may still end chunks of its own.
                    if skipped || wasAtEnd { continue }
                }
            }
            guard let current = entry else { return }
            let row = try IndexRow(storedKey: current.key, value: current.value)
            if row.isInPrefixGroup {
                let group = try Self.prefixGroup(startingWith: row, entry: &entry, step: cursor.previous, descending: true)
                for member in group where range.isBelowUpper(member.fullKey) {
                    guard range.isAboveLower(member.fullKey) else { return }
                    if try !body(.row(member)) { return }
                }
                continue
            }
            if range.isBelowUpper(row.fullKey) {
                guard range.isAboveLower(row.fullKey) else { return }
                if try !body(.row(row)) { return }
            }
            entry = try cursor.previous()
        }
    }

    /// The rows whose stored keys share `row`'s 480-byte prefix, read by stepping
    /// the cursor (leaving `entry` on the first row past them), in full-key order.
    private static func prefixGroup(
        startingWith row: IndexRow, entry: inout LMDBCursor.Entry?,
        step: () throws(StorageError) -> LMDBCursor.Entry?, descending: Bool
    ) throws -> [IndexRow] {
        var group = [row]
        entry = try step()
        while let next = entry, next.key.count >= IndexRow.prefixLength,
              memcmp(next.key.baseAddress!, row.storedKey.baseAddress!, IndexRow.prefixLength) == 0 {
            group.append(try IndexRow(storedKey: next.key, value: next.value))
            entry = try step()
        }
        group.sort { compareBytes($0.fullKey, $1.fullKey) * (descending ? -1 : 1) < 0 }
        return group
    }
}
