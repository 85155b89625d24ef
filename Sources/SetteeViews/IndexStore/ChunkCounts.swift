import Foundation
import Synchronization
import SetteeCore
@_spi(LMDB) package import SetteeStorage

/// An index's chunk boundaries held in memory, each with the rows up to and
/// including it: all of level 2, and the level-1 boundaries between two
/// level-2 ones once a query has needed them.
///
/// A query's `offset` (the rows before its range) would fold stored chunks
/// from the index's start, one B-tree step per chunk and level. With these, two
/// binary searches find the last level-1 chunk before the range, and the fold
/// walks the rows after it only (about 16). Made for an index state that
/// several queries read (see ``ViewIndexStore``), and dropped with it; nothing
/// goes stale, as a write makes a new state.
package final class ChunkCounts: Sendable {
    /// The level read whole: about 512 rows a chunk, so an index of a million
    /// rows keeps about 2,000 boundaries (one B-tree pass to read).
    package static let level = 2

    private let top: Boundaries
    /// Slot `i` holds the level-1 boundaries after the top level's boundary
    /// `i - 1` and before its boundary `i` (about 16): read the first time a
    /// query's range starts there, the same reading the fold would do.
    private let slots: Mutex<[Boundaries?]>

    /// Reads the top level's chunks (its last chunk, which has no boundary, is left out).
    package init(chunks: LMDBTable, in transaction: LMDBTransaction) throws {
        let top = try transaction.withCursor(chunks) { cursor in
            try Boundaries(level: Self.level, after: nil, before: nil, rowsBefore: 0, cursor: cursor)
        }
        self.top = top
        slots = Mutex([Boundaries?](repeating: nil, count: top.count + 1))
    }

    /// The last level-1 chunk lying wholly below `range`'s upper bound: its
    /// boundary and the rows up to it, or nil when the index's first chunk
    /// already reaches past. `transaction` must see the state these were read
    /// from.
    package func lastChunk(below range: IndexRange, chunks: LMDBTable, in transaction: LMDBTransaction) throws -> (boundary: [UInt8], rows: Int)? {
        let slot = top.count(below: range)
        let fine = try slots.withLock { slots in
            if let fine = slots[slot] { return fine }
            let fine = try transaction.withCursor(chunks) { cursor in
                try Boundaries(level: 1, after: slot > 0 ? top.key(slot - 1) : nil, before: slot < top.count ? top.key(slot) : nil,
                               rowsBefore: slot > 0 ? top.rows[slot - 1] : 0, cursor: cursor)
            }
            slots[slot] = fine
            return fine
        }
        let below = fine.count(below: range)
        if below > 0 { return (fine.key(below - 1), fine.rows[below - 1]) }
        if slot > 0 { return (top.key(slot - 1), top.rows[slot - 1]) }
        return nil
    }

    /// Whether the level-1 boundaries of some slot have been read (for tests).
    package var hasLevelOne: Bool {
        slots.withLock { $0.contains { $0 != nil } }
    }
}

/// Consecutive boundaries of one chunk level, in key order, with the rows up
/// to and including each.
private struct Boundaries: Sendable {
    /// The boundaries' bytes, one after another.
    private var keys: [UInt8] = []
    /// Where each boundary ends in `keys`.
    private var ends: [Int] = []
    /// Rows up to and including each boundary.
    private(set) var rows: [Int] = []

    var count: Int { ends.count }

    /// Reads the level's boundaries after `after` and before `before` (nil:
    /// from the level's start, to its end); the rows before the first are `rowsBefore`.
    init(level: Int, after: [UInt8]?, before: [UInt8]?, rowsBefore: Int, cursor: LMDBCursor) throws {
        var seekKey: [UInt8] = []
        var entry = try StoredReductions.chunk(level: level, after: after, cursor: cursor, key: &seekKey)
        var total = rowsBefore
        while let (key, value) = entry, key.first == UInt8(level) {
            // A slice, not dropFirst(): that one is not inlined here, a call per boundary.
            let part = UnsafeRawBufferPointer(rebasing: key[1...])
            if let before, compareBytes(part, before) >= 0 { break }
            let chunk = try StoredChunk(value: value)
            if chunk.isTail { break }
            total += chunk.rowCount
            keys.append(contentsOf: part)
            ends.append(keys.count)
            rows.append(total)
            entry = try cursor.next()
        }
    }

    func key(_ index: Int) -> [UInt8] {
        Array(keys[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
    }

    /// How many of the boundaries lie below `range`'s upper bound.
    func count(below range: IndexRange) -> Int {
        var low = 0
        var high = ends.count
        keys.withUnsafeBytes { keys in
            while low < high {
                let middle = (low + high) / 2
                let start = middle == 0 ? 0 : ends[middle - 1]
                if range.isBelowUpper(UnsafeRawBufferPointer(rebasing: keys[start..<ends[middle]])) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
        }
        return low
    }
}
