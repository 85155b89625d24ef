import Foundation
import SetteeCore
@_spi(LMDB) package import SetteeStorage

extension StoredReductions {
    /// Computes every chunk of the rows a write of `sorted` into the rows
    /// table leaves there — the table's rows as `snapshot` sees them, merged
    /// with the new rows, a new row replacing a row of the table under the
    /// same key (and, of new rows under one key, the last one standing) —
    /// without reading the table after the write. Made while the write goes
    /// on (see ``ViewIndexer``), so that a bulk build's last write and its
    /// chunks overlap; the entries are the ones ``computeChunks(from:_:)``
    /// would compute once the write committed.
    package func computeChunks(merging sorted: SortedRows, bytes: UnsafeRawBufferPointer, withRowsOf snapshot: LMDBTransaction,
                               _ emit: (_ key: [UInt8], _ value: [UInt8]) throws -> Void) throws {
        let entries = sorted.entries
        let base = bytes.baseAddress
        func key(_ index: Int) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: base! + Int(entries[index].keyStart), count: Int(entries[index].keyLength))
        }
        func value(_ index: Int) -> UnsafeRawBufferPointer {
            let entry = entries[index]
            return UnsafeRawBufferPointer(start: base! + Int(entry.keyStart + entry.keyLength), count: Int(entry.valueLength))
        }
        try snapshot.withCursor(rows) { old in
            var existing = try old.first()
            var next = 0
            var passed = 0
            try computeChunks(nextRow: {
                // A later new row under the same key replaces this one.
                while next + 1 < entries.count, compareBytes(key(next), key(next + 1)) == 0 { next += 1 }
                if let row = existing {
                    let order = next < entries.count ? compareBytes(row.key, key(next)) : -1
                    if order <= 0 {
                        passed += 1
                        if passed & 0x3FFF == 0 { snapshot.environment.releaseMappedPages() }
                        existing = try old.next()
                        // A row of the table under a new key gives way to it.
                        if order < 0 { return row }
                    }
                }
                guard next < entries.count else { return nil }
                defer { next += 1 }
                return (key(next), value(next))
            }, emit)
        }
    }
}
