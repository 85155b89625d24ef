import CSetteeLMDB
import Foundation

/// Walks an index's rows in full-key order (either direction) within a range,
/// sorting the rare groups of long keys that share a stored prefix (see
/// ``IndexRow``). Rows point into the memory map: valid during the transaction.
struct IndexScanner {
    let transaction: LMDBTransaction
    let rows: MDB_dbi

    /// Calls `body` for each row in `range`, ascending or descending, until it returns false.
    func scan(_ range: IndexRange, descending: Bool, _ body: (IndexRow) throws -> Bool) throws {
        try transaction.withCursor(rows) { cursor in
            if descending {
                try scanDescending(range, cursor: cursor, body)
            } else {
                try scanAscending(range, cursor: cursor, body)
            }
        }
    }

    private func scanAscending(_ range: IndexRange, cursor: LMDBCursor, _ body: (IndexRow) throws -> Bool) throws {
        var entry: LMDBCursor.Entry?
        if let lower = range.lower {
            let seekKey = Array(lower.bytes.prefix(IndexRow.prefixLength))
            entry = try seekKey.withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
        } else {
            entry = try cursor.first()
        }
        while let current = entry {
            let row = IndexRow(storedKey: current.key, value: current.value)
            if row.isInPrefixGroup {
                let group = try Self.prefixGroup(startingWith: row, entry: &entry, step: cursor.next, descending: false)
                for member in group where range.isAboveLower(member.fullKey) {
                    guard range.isBelowUpper(member.fullKey) else { return }
                    if try !body(member) { return }
                }
                continue
            }
            if range.isAboveLower(row.fullKey) {
                guard range.isBelowUpper(row.fullKey) else { return }
                if try !body(row) { return }
            }
            entry = try cursor.next()
        }
    }

    private func scanDescending(_ range: IndexRange, cursor: LMDBCursor, _ body: (IndexRow) throws -> Bool) throws {
        var entry: LMDBCursor.Entry?
        if let upper = range.upper {
            // Land past every row that could be at or below the bound, then walk back.
            var seekKey = Array(upper.bytes.prefix(IndexRow.prefixLength))
            if upper.bytes.count >= IndexRow.prefixLength { seekKey += [UInt8](repeating: 0xFF, count: 32) }
            entry = try seekKey.withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
            entry = entry == nil ? try cursor.last() : entry
        } else {
            entry = try cursor.last()
        }
        while let current = entry {
            let row = IndexRow(storedKey: current.key, value: current.value)
            if row.isInPrefixGroup {
                let group = try Self.prefixGroup(startingWith: row, entry: &entry, step: cursor.previous, descending: true)
                for member in group where range.isBelowUpper(member.fullKey) {
                    guard range.isAboveLower(member.fullKey) else { return }
                    if try !body(member) { return }
                }
                continue
            }
            if range.isBelowUpper(row.fullKey) {
                guard range.isAboveLower(row.fullKey) else { return }
                if try !body(row) { return }
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
            group.append(IndexRow(storedKey: next.key, value: next.value))
            entry = try step()
        }
        group.sort { compareBytes($0.fullKey, $1.fullKey) * (descending ? -1 : 1) < 0 }
        return group
    }
}
