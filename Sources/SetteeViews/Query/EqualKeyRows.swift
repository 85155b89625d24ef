import Foundation
import SetteeCore
import SetteeStorage

/// CouchDB's order for the rows one document emits under the same key in one
/// view: by value, in Erlang's term order. `couch_mrview_updater:insert_results/5`
/// sorts a document's `{Key, Value}` pairs with `lists:sort/1` and keeps a key's
/// values together (`{dups, Values}`); `couch_mrview_util:expand_dups/2` gives
/// them back in that order, whichever way a query walks.
///
/// A stored row's emit index (see ``IndexRow``) orders such rows, so the rows
/// get the emit indexes they had among themselves, handed out by value.
extension MappedBatch {
    /// Reorders, by value, the emit indexes of rows from `start` on (one
    /// document's) that share a view and key. `scratch` is reused between calls.
    package mutating func orderEqualKeysByValue(fromRow start: Int, scratch: inout [Int]) {
        guard rows.count - start > 1 else { return }
        let rows = self.rows
        bytes.withUnsafeMutableBytes { bytes in
            let base = UnsafeRawBufferPointer(bytes)
            func row(_ index: Int) -> IndexRow? {
                let row = rows[index]
                return try? IndexRow(storedKey: UnsafeRawBufferPointer(rebasing: base[Int(row.keyStart)..<Int(row.valueStart)]),
                                     value: UnsafeRawBufferPointer(rebasing: base[Int(row.valueStart)..<Int(row.valueStart + row.valueLength)]))
            }
            // Most documents emit different keys: with a few rows, a look at each pair settles it.
            if rows.count - start <= 16 {
                var shared = false
                search: for a in start..<rows.count {
                    for b in a + 1..<rows.count where rows[a].target == rows[b].target {
                        if let rowA = row(a), let rowB = row(b), compareBytes(rowA.keyJSON, rowB.keyJSON) == 0 {
                            shared = true
                            break search
                        }
                    }
                }
                if !shared { return }
            }
            // Rows by view, then key JSON (the same key gives the same text), then emit order.
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: start..<rows.count)
            scratch.sort { a, b in
                if rows[a].target != rows[b].target { return rows[a].target < rows[b].target }
                guard let rowA = row(a), let rowB = row(b) else { return a < b }
                let order = compareBytes(rowA.keyJSON, rowB.keyJSON)
                return order != 0 ? order < 0 : a < b
            }
            var runStart = 0
            while runStart < scratch.count {
                var runEnd = runStart + 1
                while runEnd < scratch.count, rows[scratch[runEnd]].target == rows[scratch[runStart]].target,
                      let first = row(scratch[runStart]), let next = row(scratch[runEnd]),
                      compareBytes(first.keyJSON, next.keyJSON) == 0 {
                    runEnd += 1
                }
                if runEnd - runStart > 1 {
                    Self.orderByValue(Array(scratch[runStart..<runEnd]), rows: rows, bytes: bytes, row: row)
                }
                runStart = runEnd
            }
        }
    }

    /// Hands the members' emit indexes (in emit order) out again by value.
    private static func orderByValue(_ members: [Int], rows: [MappedRow], bytes: UnsafeMutableRawBufferPointer,
                                     row: (Int) -> IndexRow?) {
        let emitIndexes = members.compactMap { row($0)?.emitIndex }
        let values = members.map { member in row(member).flatMap { try? JSONParser.parse($0.valueJSON) } ?? .null }
        guard emitIndexes.count == members.count else { return }
        // lists:sort/1 is stable: equal values keep their emit order.
        let byValue = members.indices.sorted { a, b in
            let order = JSONValue.erlangOrder(values[a], values[b])
            return order != 0 ? order < 0 : a < b
        }
        for (rank, member) in byValue.enumerated() where emitIndexes[member] != emitIndexes[rank] {
            let stored = rows[members[member]]
            IndexRow.setEmitIndex(emitIndexes[rank], keyStart: Int(stored.keyStart), keyLength: Int(stored.keyLength),
                                  valueLength: Int(stored.valueLength), in: bytes)
        }
    }
}

extension IndexRow {
    /// Rewrites, in place, the emit index of the stored row whose key begins
    /// at `keyStart` in `bytes`: in the full key, and in the hash a long key's
    /// stored key ends with. The row's length does not change.
    package static func setEmitIndex(_ emitIndex: UInt32, keyStart: Int, keyLength: Int, valueLength: Int,
                             in bytes: UnsafeMutableRawBufferPointer) {
        let base = UnsafeRawBufferPointer(bytes)
        let storedKey = UnsafeRawBufferPointer(rebasing: base[keyStart..<keyStart + keyLength])
        let value = UnsafeRawBufferPointer(rebasing: base[keyStart + keyLength..<keyStart + keyLength + valueLength])
        guard let row = try? IndexRow(storedKey: storedKey, value: value) else { return }
        let fullKey = row.fullKey
        let fullKeyStart = fullKey.baseAddress! - base.baseAddress!
        withUnsafeBytes(of: emitIndex.bigEndian) { index in
            UnsafeMutableRawBufferPointer(rebasing: bytes[fullKeyStart + fullKey.count - 4..<fullKeyStart + fullKey.count]).copyMemory(from: index)
        }
        if fullKeyStart != keyStart {
            // A long key: its stored key is the full key's prefix and hash (appendStoredKey).
            let hash = SHA256.hash(UnsafeRawBufferPointer(rebasing: base[fullKeyStart..<fullKeyStart + fullKey.count])).prefix(16)
            UnsafeMutableRawBufferPointer(rebasing: bytes[keyStart + prefixLength..<keyStart + keyLength]).copyBytes(from: hash)
        }
    }
}
