import CSetteeLMDB
import Foundation

/// One level of an index's stored chunks held in memory: each chunk's boundary
/// (the stored key of its last row) and the rows up to and including it.
///
/// A query's `offset` (the rows before its range) folds stored chunks from the
/// index's start, one B-tree step per chunk and level. With this level in
/// memory, a binary search finds the last whole chunk before the range and the
/// fold goes on from its boundary, through the levels below only. Made for an
/// index state that several queries read (see ``ViewIndexStore``), and dropped
/// with it.
struct ChunkCounts: Sendable {
    /// The level whose chunks are kept: about 512 rows each, so an index of a
    /// million rows keeps about 2,000 boundaries (one B-tree pass to read).
    static let level = 2

    /// The boundaries' bytes, one after another.
    private let keys: [UInt8]
    /// Where each boundary ends in `keys`.
    private let ends: [Int]
    /// Rows up to and including each boundary.
    private let rows: [Int]

    /// Reads the level's chunks (its last chunk, which has no boundary, is left out).
    init(chunks: MDB_dbi, in transaction: LMDBTransaction) throws {
        var keys: [UInt8] = []
        var ends: [Int] = []
        var rows: [Int] = []
        var total = 0
        try transaction.withCursor(chunks) { cursor in
            var entry = try cursor.seek(atOrAfter: [UInt8(Self.level)])
            while let (key, value) = entry, key.first == UInt8(Self.level) {
                let chunk = StoredChunk(value: value)
                if chunk.isTail { break }
                total += chunk.rowCount
                keys.append(contentsOf: UnsafeRawBufferPointer(rebasing: key.dropFirst()))
                ends.append(keys.count)
                rows.append(total)
                entry = try cursor.next()
            }
        }
        self.keys = keys
        self.ends = ends
        self.rows = rows
    }

    /// The last chunk lying wholly below `range`'s upper bound: its boundary
    /// and the rows up to it, or nil when the first chunk already reaches past.
    func lastChunk(below range: IndexRange) -> (boundary: [UInt8], rows: Int)? {
        // The first boundary not below the bound; the one before it is the answer.
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
        guard low > 0 else { return nil }
        let start = low == 1 ? 0 : ends[low - 2]
        return (Array(keys[start..<ends[low - 1]]), rows[low - 1])
    }
}
