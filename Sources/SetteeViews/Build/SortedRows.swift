import Foundation
import SetteeCore
@_spi(LMDB) package import SetteeStorage

/// Rows of a ``MappedBatch`` in stored-key order, sorted without touching the
/// batch's arrays per comparison: each entry carries eight bytes of its key
/// (taken after the prefix every key shares), so most comparisons are one
/// integer compare and the rest one `memcmp`.
package struct SortedRows: Sendable {
    package struct Entry: Sendable {
        package var prefix: UInt64
        package var keyStart: Int32
        package var keyLength: Int32
        package var valueLength: Int32

        /// The row's stored key in its batch's `bytes` (at `base`).
        package func key(at base: UnsafeRawPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: base + Int(keyStart), count: Int(keyLength))
        }

        /// The row's value in its batch's `bytes` (at `base`).
        package func value(at base: UnsafeRawPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: base + Int(keyStart + keyLength), count: Int(valueLength))
        }
    }

    package private(set) var entries: [Entry] = []

    package init(capacity: Int) {
        entries.reserveCapacity(capacity)
    }

    package mutating func add(_ row: MappedRow) {
        entries.append(Entry(prefix: 0, keyStart: row.keyStart, keyLength: row.keyLength, valueLength: row.valueLength))
    }

    /// Adds the rows of index `target` that `documents` (places in `batch`) emitted.
    package mutating func add(rowsOf documents: [Int], in batch: MappedBatch, target: Int) {
        for document in documents {
            for row in batch.rows(of: document) where row.target == target {
                add(row)
            }
        }
    }

    /// Sorts the entries by their keys in `bytes`.
    package mutating func sort(in bytes: UnsafeRawBufferPointer) {
        guard entries.count > 1, let base = bytes.baseAddress else { return }
        // Keys that grow with the documents' ids or sequences come in order
        // already: a look at each pair costs less than sorting (and a random
        // order stops it at once).
        func key(_ entry: Entry) -> UnsafeRawBufferPointer { entry.key(at: base) }
        if entries.indices.dropFirst().allSatisfy({ compareBytes(key(entries[$0 - 1]), key(entries[$0])) <= 0 }) { return }
        // The length of the prefix every key shares with the first.
        let first = entries[0]
        var shared = Int(first.keyLength)
        for entry in entries where shared > 0 {
            let limit = min(shared, Int(entry.keyLength))
            var length = 0
            while length < limit && base.load(fromByteOffset: Int(first.keyStart) + length, as: UInt8.self)
                == base.load(fromByteOffset: Int(entry.keyStart) + length, as: UInt8.self) {
                length += 1
            }
            shared = length
        }
        for index in entries.indices {
            var prefix: UInt64 = 0
            let start = Int(entries[index].keyStart)
            let end = start + Int(entries[index].keyLength)
            for offset in 0..<8 {
                let position = start + shared + offset
                prefix = prefix << 8 | UInt64(position < end ? base.load(fromByteOffset: position, as: UInt8.self) : 0)
            }
            entries[index].prefix = prefix
        }
        entries.withUnsafeMutableBufferPointer { entries in
            entries.sort { a, b in
                if a.prefix != b.prefix { return a.prefix < b.prefix }
                let common = Int(min(a.keyLength, b.keyLength))
                let order = memcmp(base + Int(a.keyStart), base + Int(b.keyStart), common)
                return order != 0 ? order < 0 : a.keyLength < b.keyLength
            }
        }
    }
}

extension SortedRows {
    /// Writes the rows (sorted) into an index's rows table, the cheapest of
    /// three ways:
    ///
    /// - **append**: every key follows the table's last (a new index's first
    ///   flush, or keys that grow with the documents): LMDB fills pages in order;
    /// - **rewrite**: the keys fall between the table's own all over it (a
    ///   bulk build whose keys come in no order), so nearly every page would
    ///   be copied and split: the table's rows and the new ones are merged
    ///   into it afresh, in order, from the snapshot this write began on.
    ///   Pages come out full and nothing is searched. Only for a table this
    ///   transaction has not written yet (`mayRewrite`);
    /// - **insert**: the rest (keys in a few places, or a table this
    ///   transaction changed), each put finding its page from the last one's.
    ///
    /// `changed`, when given, collects the keys written (for the chunks kept
    /// up per write). Returns how the rows went in, and whether they were
    /// scattered (see ``Placement/isScattered``).
    @discardableResult
    package func write(to table: LMDBTable, bytes: UnsafeRawBufferPointer, in transaction: LMDBTransaction,
               mayRewrite: Bool, changed: inout [[UInt8]]?) throws -> Placement {
        guard let first = entries.first, let base = bytes.baseAddress else { return .append }
        func key(_ entry: Entry) -> UnsafeRawBufferPointer { entry.key(at: base) }
        func value(_ entry: Entry) -> UnsafeRawBufferPointer { entry.value(at: base) }
        let placement: Placement
        if try transaction.isAfterLastKey(table, key(first)) {
            placement = .append
        } else if mayRewrite || entries.count > Self.samples {
            let places = try estimatedPlaces(among: table, in: transaction, key: key)
            if mayRewrite, places * 2 >= Double(try transaction.leafPages(table)) {
                placement = .rewrite
            } else {
                placement = .insert(scattered: places * Double(Self.orderedRun) > Double(entries.count))
            }
        } else {
            // Too few rows for a sample to tell: taken as scattered.
            placement = .insert(scattered: true)
        }
        // Pages of a large table read as the writes pass go again (they would
        // otherwise stay this process's memory): a rewrite reads all of them.
        let releasing = placement != .append && (placement == .rewrite || entries.count >= Self.releaseThreshold)
        var written = 0
        func wrote() {
            written += 1
            if releasing && written & 0xFFF == 0 { transaction.environment.releaseMappedPages() }
        }
        if placement == .rewrite {
            // The snapshot is the one this transaction began on: this process
            // holds the write lock, so nothing has been committed since.
            try transaction.environment.read { snapshot in
                try transaction.clear(table)
                try transaction.withCursor(table) { cursor in
                    try snapshot.withCursor(table) { old in
                        var existing = try old.first()
                        for entry in entries {
                            let newKey = key(entry)
                            // A row of the table under a new key gives way, as it would to a put.
                            while let row = existing, case let order = compareBytes(row.key, newKey), order <= 0 {
                                if order < 0 {
                                    try cursor.put(row.key, row.value, append: true)
                                    wrote()
                                }
                                existing = try old.next()
                            }
                            try cursor.put(newKey, value(entry), append: true)
                            wrote()
                        }
                        while let row = existing {
                            try cursor.put(row.key, row.value, append: true)
                            existing = try old.next()
                            wrote()
                        }
                    }
                }
            }
            changed?.append(contentsOf: entries.map { Array(key($0)) })
            return placement
        }
        try transaction.withCursor(table) { cursor in
            for entry in entries {
                try cursor.put(key(entry), value(entry), append: placement == .append)
                changed?.append(Array(key(entry)))
                wrote()
            }
        }
        return placement
    }

    /// How ``write(to:bytes:in:mayRewrite:changed:)`` put the rows in.
    package enum Placement: Equatable {
        case append
        /// Put by put; `scattered` when they fell among the table's keys in
        /// runs shorter than ``SortedRows/orderedRun`` rows on average.
        case insert(scattered: Bool)
        case rewrite

        /// Whether the rows fell all over the table, so that the write cost
        /// about a page per row (or the whole table) rather than what the
        /// rows themselves take: more rows per write would have shared those
        /// pages. Appended rows and rows in a few long runs (keys that grow
        /// with the documents' ids within a few groups) are not scattered.
        package var isScattered: Bool {
            switch self {
            case .append: false
            case .insert(let scattered): scattered
            case .rewrite: true
            }
        }
    }

    /// Rows inserted in runs at least this long on average are in order
    /// enough that writing fewer of them at a time costs no more per row.
    package static let orderedRun = 16

    /// Sorted rows this many and more release the pages they pass.
    private static let releaseThreshold = 1024
    /// Neighbouring new keys looked at to tell how the keys fall among the table's.
    private static let samples = 256

    /// How many places among the table's keys the new keys go in: from a
    /// sample of neighbouring new keys, the share with a key of the table
    /// between them, times the rows. A rewrite is chosen when inserting them
    /// would touch at least half of the table's leaf pages.
    private func estimatedPlaces(among table: LMDBTable, in transaction: LMDBTransaction,
                                 key: (Entry) -> UnsafeRawBufferPointer) throws -> Double {
        guard entries.count > 1 else { return Double(entries.count) }
        let pairs = entries.count - 1
        let step = max(1, pairs / Self.samples)
        var sampled = 0
        var between = 0
        try transaction.withCursor(table) { cursor in
            for index in stride(from: 0, to: pairs, by: step) {
                sampled += 1
                if let existing = try cursor.seek(atOrAfter: key(entries[index])),
                   compareBytes(existing.key, key(entries[index + 1])) < 0 {
                    between += 1
                }
            }
        }
        return max(1, Double(between) / Double(sampled) * Double(entries.count))
    }
}
