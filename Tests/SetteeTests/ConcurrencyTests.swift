import Foundation
import Testing
@testable import Settee
@_spi(LMDB) import SetteeStorage
import SetteeCore
import SetteeViews

private let pairsDesign = #"""
    {"_id": "_design/pairs", "views": {
      "by_n": {"map": "function (doc) { emit(doc.n, doc.n); }", "reduce": "_sum"}}}
    """#

/// `count` documents in pairs (`a…` and `b…` with the same `n`), as NDJSON.
private func pairLines(_ range: Range<Int>, padding: Int = 0) -> String {
    range.flatMap { n in
        ["a", "b"].map { #"{"_id": "\#($0)\#(String(format: "%06d", n))", "n": \#(n), "pad": "\#(String(repeating: "p", count: padding))"}"# }
    }.joined(separator: "\n")
}

/// More of the suite "Database from many threads" (ViewTests.swift): readers
/// during writes and index builds, and two processes on one database.
extension ConcurrencyTests {
    @Test("Readers on many threads never wait for the writer and never see half a write or half an index batch")
    func readersDuringWritesAndIndexing() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 2
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        // Pairs never straddle an index batch (8,192 changes): the design
        // document comes last, and every later update is one batch.
        _ = try db.importDocuments(Data(pairLines(0..<10_000).utf8))
        try db.loadDesignDocuments(from: directory.file("pairs.json", contents: pairsDesign))
        _ = try db.query("pairs/by_n", options: ViewQueryOptions(parameters: [("limit", "0")]))

        let done = ManagedAtomicFlag()
        let readers = 4
        let results = ReaderResults()
        let threads = (0..<readers).map { reader in
            Thread {
                var snapshots = 0
                var longest = Duration.zero
                var lastTotal = -1
                while !done.isSet || snapshots == 0 {
                    let started = ContinuousClock.now
                    let parameters: [(name: String, value: String)] = [("update", "false"), ("reduce", "false")]
                    let result: ViewResult
                    do {
                        result = try db.query("pairs/by_n", options: ViewQueryOptions(parameters: parameters))
                    } catch {
                        results.record(problem: "reader \(reader): \(error)")
                        break
                    }
                    longest = max(longest, ContinuousClock.now - started)
                    snapshots += 1
                    // One snapshot: total_rows counts exactly the rows returned, which come in whole pairs.
                    if result.totalRows != result.rows.count { results.record(problem: "total_rows \(result.totalRows ?? -1) != \(result.rows.count) rows") }
                    var ids = Set<String>()
                    for row in result.rows { ids.insert(row.id!) }
                    for id in ids where id.hasPrefix("a") && !ids.contains("b" + id.dropFirst()) {
                        results.record(problem: "half a pair: \(id)")
                    }
                    if ids.count % 2 != 0 { results.record(problem: "odd row count \(ids.count)") }
                    if result.rows.count < lastTotal { results.record(problem: "the index went back") }
                    lastTotal = result.rows.count
                }
                results.record(snapshots: snapshots, longest: longest)
            }
        }
        threads.forEach { $0.start() }
        // The writer: pairs in one transaction each, and index updates of every size.
        let started = ContinuousClock.now
        var next = 10_000
        for round in 0..<30 {
            let count = round % 10 == 0 ? 3000 : 20
            _ = try db.importDocuments(Data(pairLines(next..<(next + count)).utf8))
            next += count
            _ = try db.query("pairs/by_n", options: ViewQueryOptions(parameters: [("limit", "0")]))
        }
        let writing = ContinuousClock.now - started
        done.set()
        results.wait(for: readers)
        #expect(results.problems.isEmpty, "\(results.problems.prefix(5))")
        #expect(results.snapshots > readers * 5, "readers kept reading while the writer worked: \(results.snapshots)")
        #expect(results.longest < writing / 4, "no read waited for the writer: longest \(results.longest) of \(writing)")
        let final = try db.query("pairs/by_n", options: ViewQueryOptions(parameters: []))
        #expect(final.rows.first?.valueJSON == "\((0..<next).reduce(0, +) * 2)")
        print("concurrency: \(results.snapshots) consistent snapshots read by \(readers) threads in \(writing); longest read \(results.longest)")
    }

    @Test("Letting go of a database while its queries run: they finish, then it closes and opens again")
    func releasedWhileQuerying() async throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        var db: Database? = try Database(at: url)
        _ = try await db!.loadDesignDocuments(from: directory.file("pairs.json", contents: pairsDesign))
        _ = try await db!.importDocuments(Data(pairLines(0..<2000).utf8))
        let queries = (0..<4).map { _ in
            Task.detached { [db = db!] in
                try await db.query("pairs/by_n", options: ViewQueryOptions(parameters: [("reduce", "false")])).rows.count
            }
        }
        weak let environment = try db!.environment
        db = nil
        for query in queries {
            #expect(try await query.value == 4000)
        }
        // A finished task lets go of what it captured as it winds down.
        for _ in 0..<100 where environment != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(environment == nil, "the environment closes once the last query let go")
        let reopened = try Database(at: url)
        let total = try await reopened.query("pairs/by_n", options: ViewQueryOptions(parameters: [("update", "false")])).rows.first?.valueJSON
        #expect(total == "\((0..<2000).reduce(0, +) * 2)")
    }

    @Test("A design document another process rewrites is seen by this process's next query, and its old view can come back")
    func designChangedByAnotherProcess() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let database = try oneWorkerDatabase(in: directory)
        try database.put(#"{"_id": "a", "n": 1}"#)
        let v1 = directory.file("v1.json", contents: #"{"_id": "_design/d", "views": {"v": {"map": "function (doc) { emit(doc.n, 1); }"}}}"#)
        try database.loadDesignDocuments(from: v1)
        // Queries with nothing committed between them reuse what the first one read.
        for _ in 0..<3 { #expect(try database.query("d/v").rows.map(\.keyJSON) == ["1"]) }
        let v2 = directory.file("v2.json", contents: #"{"_id": "_design/d", "views": {"v": {"map": "function (doc) { emit(doc.n * 10, 1); }"}}}"#)
        let outcome = try settee.run(["--db", url.path, "design", "load", v2.path], in: directory.url)
        #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
        #expect(try database.query("d/v").rows.map(\.keyJSON) == ["10"])
        // The view comes back here: its index is built again in the tables this
        // process still holds handles of, which the other process emptied.
        try database.loadDesignDocuments(from: v1)
        #expect(try database.query("d/v").rows.map(\.keyJSON) == ["1"])
        try database.put(#"{"_id": "b", "n": 2}"#)
        #expect(try database.query("d/v").rows.map(\.keyJSON) == ["1", "2"])
    }

    @Test("A view edited again and again in one process: the old indexes' table handles are closed and their slots used again")
    func handlesOfEmptiedTablesAreReused() throws {
        let directory = TemporaryDirectory()
        let db = try oneWorkerDatabase(in: directory)
        try db.put(#"{"_id": "a", "n": 1}"#)
        var handles = Set<LMDBTable>()
        for edit in 0..<40 {
            let design = #"{"_id": "_design/d", "views": {"v": {"map": "function (doc) { emit(doc.n + \#(edit), null); }"}}}"#
            try db.loadDesignDocuments(from: directory.file("d.json", contents: design))
            #expect(try db.query("d/v").rows.map(\.keyJSON) == ["\(1 + edit)"])
            let tables = try db.indexes.tables(for: try db.designDocument("d")!.view("v")!.signature)
            handles.formUnion([tables.rows, tables.back, tables.chunks])
        }
        // Without closing, each edit would take three new handles (120 in all).
        #expect(handles.count <= 12, "\(handles.map(\.dbi).sorted())")
    }

    @Test("A query holding a removed index's tables reads none of them: no state in its snapshot, no rows")
    func removedIndexTablesAreNotRead() throws {
        let directory = TemporaryDirectory()
        let (db, old, oldTables) = try replacedIndex(in: directory)
        let result = try query(old, tables: oldTables, in: db)
        #expect(result.rows.isEmpty)
        #expect(result.totalRows == 0)
    }

    @Test("A query holding the handles of an index that was removed and came back under other handles reads it through its new ones")
    func indexBackUnderOtherHandles() throws {
        let directory = TemporaryDirectory()
        let (db, view, oldTables) = try replacedIndex(in: directory)
        let changed = try db.indexes.tables(for: try db.designDocument("d")!.view("v")!.signature)
        let others = try db.environment.openDatabases(["other:1", "other:2", "other:3"])
        #expect(Set([oldTables.rows, oldTables.back, oldTables.chunks]).isSubset(of: Set(others + [changed.rows, changed.back, changed.chunks])),
                "the new index's tables or others hold the old slots")
        // The same view in another design document: the index comes back, under other handles.
        try db.loadDesignDocuments(from: directory.file("e.json", contents: #"{"_id": "_design/e", "views": {"v": {"map": "\#(Self.replacedMap)"}}}"#))
        #expect(try db.query("e/v").rows.count == 6)
        #expect(try db.indexes.tables(for: view.signature) != oldTables)
        let result = try query(view, tables: oldTables, in: db)
        #expect(result.rows.map(\.id) == ["d0", "d1", "d2", "d3", "d4", "after"])
        #expect(result.totalRows == 6)
    }

    @Test("find's index reads (IndexEntryReader) with a removed index's handles: no rows; with those of one that came back: its rows")
    func indexEntryReaderWithOldHandles() throws {
        let directory = TemporaryDirectory()
        let (db, view, oldTables) = try replacedIndex(in: directory)
        func ids() throws -> [String] {
            var ids: [String] = []
            try IndexEntryReader(store: db.store, indexes: db.indexes)
                .read(view, IndexScan(range: .all, documents: true), tables: oldTables, requiringIndex: false) { entry in
                    #expect(entry.document != nil, "\(entry.row.id)'s document is read with its row")
                    ids.append(entry.row.id)
                    return true
                }
            return ids
        }
        #expect(try ids().isEmpty)
        try db.loadDesignDocuments(from: directory.file("e.json", contents: #"{"_id": "_design/e", "views": {"v": {"map": "\#(Self.replacedMap)"}}}"#))
        #expect(try db.query("e/v").rows.count == 6)
        #expect(try ids() == ["d0", "d1", "d2", "d3", "d4", "after"])
    }

    static let replacedMap = "function (doc) { emit(doc.n, null); }"

    /// A database whose view d/v (``replacedMap``) was built and then changed:
    /// its index went, the new one was built, and a later write closed the old
    /// handles, whose slots the new index's tables may have taken. Returns the
    /// old view and its tables.
    private func replacedIndex(in directory: TemporaryDirectory) throws -> (Database, ViewDefinition, ViewIndexTables) {
        let db = try oneWorkerDatabase(in: directory)
        for n in 0..<5 { try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
        try db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id": "_design/d", "views": {"v": {"map": "\#(Self.replacedMap)"}}}"#))
        #expect(try db.query("d/v").rows.count == 5)
        let old = try db.designDocument("d")!.view("v")!
        let oldTables = try db.indexes.tables(for: old.signature)
        try db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id": "_design/d", "views": {"v": {"map": "function (doc) { emit(-doc.n, null); }"}}}"#))
        #expect(try db.query("d/v").rows.count == 5)
        try db.put(#"{"_id": "after", "n": 9}"#)
        return (db, old, oldTables)
    }

    /// A plain query of `view` run with these table handles.
    private func query(_ view: ViewDefinition, tables: ViewIndexTables, in db: Database) throws -> ViewResult {
        let runner = try ViewQueryRunner(store: db.store, indexes: db.indexes, workers: db.viewFunctions())
        return try runner.run(view, try ValidatedViewQuery(view: ViewQueryOptions(), viewHasReduce: false) { CollationKey.compare($0, $1, mode: view.collation) },
                              tables: tables)
    }

    @Test("Two settee processes importing and indexing one database at once: every document once, sequences gapless, the index exact")
    func twoProcesses() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let db = directory.url.appendingPathComponent("db").path
        #expect(try settee.run(["--db", db, "design", "load", directory.file("pairs.json", contents: pairsDesign).path], in: directory.url).exitStatus == 0)
        let first = directory.file("first.ndjson", contents: pairLines(0..<5000, padding: 200))
        let second = directory.file("second.ndjson", contents: pairLines(5000..<10_000, padding: 200))
        let processes = [
            try settee.start(["--db", db, "import", first.path], in: directory.url),
            try settee.start(["--db", db, "index"], in: directory.url),
            try settee.start(["--db", db, "import", second.path], in: directory.url),
            try settee.start(["--db", db, "index"], in: directory.url),
        ]
        for process in processes {
            let outcome = try process.wait()
            #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
        }
        #expect(try settee.run(["--db", db, "index"], in: directory.url).exitStatus == 0)
        let database = try oneWorkerDatabase(in: directory)
        let changes = try database.changes()
        #expect(changes.count == 20_001)
        #expect(changes.map(\.sequence) == (1...20_001).map { UInt64($0) })
        let rows = try database.query("pairs/by_n", options: ViewQueryOptions(parameters: [("update", "false"), ("reduce", "false")])).rows
        #expect(rows.count == 20_000)
        #expect(Set(rows.compactMap(\.id)).count == 20_000)
        let total = try database.query("pairs/by_n", options: ViewQueryOptions(parameters: [("update", "false")])).rows.first?.valueJSON
        #expect(total == "\((0..<10_000).reduce(0, +) * 2)")
        #expect(try database.viewInfo().first?.indexedSequence == 20_001)
    }
}

/// A database in `directory`/db with one JavaScript worker.
private func oneWorkerDatabase(in directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// A flag set once by the writer and read by the readers.
private final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// What the reader threads saw.
private final class ReaderResults: @unchecked Sendable {
    private let condition = NSCondition()
    private(set) var problems: [String] = []
    private(set) var snapshots = 0
    private(set) var longest = Duration.zero
    private var finished = 0

    func record(problem: String) {
        condition.withLock { problems.append(problem) }
    }

    func record(snapshots: Int, longest: Duration) {
        condition.withLock {
            self.snapshots += snapshots
            self.longest = max(self.longest, longest)
            finished += 1
            condition.broadcast()
        }
    }

    func wait(for readers: Int) {
        condition.withLock {
            while finished < readers { condition.wait() }
        }
    }

    @Test("A query reading an index while a design-document change removes it goes on reading its snapshot",
          arguments: [true, false])
    func indexRemovedUnderAReader(touchedBefore: Bool) throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        #expect(try db.importDocuments(Data(pairLines(0..<500).utf8)).imported == 1000)
        try db.loadDesignDocuments(from: directory.file("pairs.json", contents: pairsDesign))
        #expect(try db.query("pairs/by_n", options: ViewQueryOptions(reduce: false)).rows.count == 1000)
        let signature = try db.designDocument("pairs")!.view("by_n")!.signature
        let tables = try db.indexes.tables(for: signature)
        // LMDB's main table lists the named tables (handle 1).
        let namedTables = try db.environment.read { try $0.count(LMDBTable(dbi: 1)) }
        try db.environment.read { transaction in
            // The reader may or may not have looked at the index before it goes.
            let before = touchedBefore ? try transaction.count(tables.rows) : 1000
            // The view changes on another thread (its old index goes) while this transaction reads.
            let changed = DispatchSemaphore(value: 0)
            let edited = directory.file("pairs.json", contents: pairsDesign.replacingOccurrences(of: "doc.n, doc.n", with: "doc.n, 1"))
            let edit = Thread {
                _ = try? db.loadDesignDocuments(from: edited)
                changed.signal()
            }
            edit.start()
            changed.wait()
            #expect(try db.environment.read { try db.indexes.state(signature, in: $0) } == nil, "the old index is gone for new readers")
            #expect(try transaction.count(tables.rows) == before)
            let rows = try transaction.withCursor(tables.rows) { cursor in
                var count = 0
                var entry = try cursor.first()
                while entry != nil { count += 1; entry = try cursor.next() }
                return count
            }
            #expect(rows == before)
            #expect(try transaction.count(tables.back) == 1000)
        }
        #expect(try db.query("pairs/by_n", options: ViewQueryOptions(reduce: false)).rows.first?.valueJSON == "1")
        // The old index's tables stay, emptied, beside the new index's three (their
        // old handles were closed once the reader ended: they are opened anew).
        let emptied = try db.environment.openDatabases(["rows:", "back:", "chunks:"].map { $0 + signature })
        try db.environment.read { transaction throws in
            #expect(try transaction.count(LMDBTable(dbi: 1)) == namedTables + 3)
            for table in emptied { #expect(try transaction.count(table) == 0) }
        }
    }
}
