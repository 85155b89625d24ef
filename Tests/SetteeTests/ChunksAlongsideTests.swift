import Foundation
import Testing
@testable import Settee
@testable import SetteeViews
@_spi(LMDB) import SetteeStorage

/// A new index's chunks are computed while its last rows are written, from
/// the rows before that write merged with the new ones: they must equal the
/// chunks computed afterwards from the committed rows.
@Suite("Chunks computed alongside a build's last write")
struct ChunksAlongsideTests {
    /// The view's definition, tables and reductions in `db`.
    private static func reductions(_ view: String, in db: Database) throws -> StoredReductions {
        let definition = try db.designDocument("b")!.view(view)!
        let tables = try db.indexes.tables(for: definition.signature)
        let reducer = try definition.reduce.map { try Reducer(source: $0, view: definition, workers: try db.viewFunctions(), chunk: 1000) }
        return StoredReductions(rows: tables.rows, chunks: tables.chunks, reducer: reducer)
    }

    /// The chunk entries computed from the committed rows, in one pass (as `entries(of:)` shows them).
    private static func reference(_ reductions: StoredReductions, in db: Database) throws -> [[UInt8]] {
        var entries: [[UInt8]] = []
        try db.environment.read { transaction in
            try reductions.computeChunks(from: transaction) { entries.append($0 + [0xEE] + $1) }
        }
        return entries.sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test("A build in many flushes stores the chunks a pass over its committed rows computes")
    func manyFlushes() throws {
        let fixture = try IndexBuildTests.Fixture(batchSize: 64, bufferBytes: 64 << 10)
        try fixture.index(IndexBuildTests.documents(6000, seed: 29))
        for view in IndexBuildTests.views {
            let reductions = try Self.reductions(view, in: fixture.db)
            let stored = try fixture.db.environment.read { try $0.entries(of: reductions.chunks) }
            #expect(stored.count > 1 || view == "none", "\(view): has chunks")
            #expect(stored == (try Self.reference(reductions, in: fixture.db)), "\(view): chunks differ from the committed rows'")
        }
    }

    @Test("Merged rows: a new row replaces the table's row under its key, the last of equal new rows standing")
    func mergeReplaces() throws {
        let fixture = try IndexBuildTests.Fixture()
        try fixture.index(IndexBuildTests.documents(3000, seed: 31))
        let reductions = try Self.reductions("by_tag", in: fixture.db)
        let existing = try fixture.db.environment.read { transaction in
            try transaction.withCursor(reductions.rows) { cursor in
                var rows: [(key: [UInt8], value: [UInt8])] = []
                var entry = try cursor.first()
                while let (key, value) = entry {
                    rows.append((Array(key), Array(value)))
                    entry = try cursor.next()
                }
                return rows
            }
        }
        #expect(existing.count > 1000)
        // Every seventh row again, twice, under other rows' values: the one sorted last stands, as it would over puts.
        var bytes: [UInt8] = []
        var added: [MappedRow] = []
        for index in stride(from: 0, to: existing.count - 2, by: 7) {
            for value in [existing[index + 2].value, existing[index + 1].value] {
                added.append(MappedRow(target: 0, keyStart: Int32(bytes.count), keyLength: Int32(existing[index].key.count),
                                       valueLength: Int32(value.count)))
                bytes += existing[index].key + value
            }
        }
        var sorted = SortedRows(capacity: added.count)
        for row in added { sorted.add(row) }
        try bytes.withUnsafeBytes { bytes in
            sorted.sort(in: bytes)
            var merged: [[UInt8]] = []
            try fixture.db.environment.read { snapshot in
                try reductions.computeChunks(merging: sorted, bytes: bytes, withRowsOf: snapshot) { merged.append($0 + [0xEE] + $1) }
            }
            try fixture.db.environment.write { transaction in
                var changed: [[UInt8]]? = nil
                try sorted.write(to: reductions.rows, bytes: bytes, in: transaction, mayRewrite: false, changed: &changed)
            }
            let expected = try Self.reference(reductions, in: fixture.db)
            #expect(merged.sorted { $0.lexicographicallyPrecedes($1) } == expected)
            // The values changed the sums: the chunks are not the ones before.
            #expect(expected != (try fixture.db.environment.read { try $0.entries(of: reductions.chunks) }))
        }
    }
}
