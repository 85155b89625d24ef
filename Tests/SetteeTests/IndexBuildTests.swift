import Foundation
import Testing
import SetteeStorage
@testable import Settee
@testable import SetteeViews

/// Large index updates gather mapped rows and write them in key order (appended
/// where they follow the index's last key); small ones write each batch and
/// keep chunks up as they go. Both must leave the same tables behind.
@Suite("Index builds", .ownThread)
struct IndexBuildTests {
    static let design = #"""
        {"_id": "_design/b", "views": {
          "by_tag": {"map": "function (doc) { if (doc.tag) emit([doc.tag, doc.n], doc.n); }", "reduce": "_sum"},
          "twice": {"map": "function (doc) { emit(doc.n % 7, null); if (doc.n % 3 === 0) emit(doc.n % 7, doc.tag); }", "reduce": "_count"},
          "none": {"map": "function (doc) { if (doc.n < 0) emit(doc.n, null); }"}
        }}
        """#
    static let views = ["by_tag", "twice", "none"]
    static let tags = ["red", "green", "blue", "amber", "violet"]

    /// A database with the design document and these batch/buffer sizes.
    struct Fixture {
        let directory = TemporaryDirectory()
        let db: Database

        /// `spillFlushes`: see ``Database/Options/indexSpillFlushes`` (`.max`: never).
        /// `location`: the database's folder (a folder in `directory` when nil).
        init(batchSize: Int = 8192, bufferBytes: Int = 48 << 20, initialMapSize: Int = 1 << 30, spillFlushes: Int = 2,
             at location: URL? = nil) throws {
            var options = Database.Options()
            options.indexSpillFlushes = spillFlushes
            options.initialMapSize = initialMapSize
            options.javaScriptWorkers = 2
            options.indexBatchSize = batchSize
            options.indexBufferBytes = bufferBytes
            db = try Database(at: location ?? directory.url.appendingPathComponent("db"), options: options)
            try db.loadDesignDocuments(from: directory.file("b.json", contents: IndexBuildTests.design))
        }

        /// Expects every view's tables to equal those of a database built from
        /// scratch from this one's live documents.
        func expectEqualToFreshBuild(_ context: String = "") throws {
            var lines: [String] = []
            for id in try db.allDocuments().rows.compactMap(\.id) where !id.hasPrefix("_design/") {
                var members = try db.document(id)!.value.objectValue!
                members.removeAll { $0.key == "_rev" }
                lines.append(JSONValue.object(members).jsonText)
            }
            let fresh = try Fixture()
            try fresh.index(lines)
            for view in IndexBuildTests.views {
                #expect(try tables(view) == fresh.tables(view), "\(context) \(view): differs from a fresh build")
            }
        }

        /// Imports these documents and brings the indexes up to date.
        func index(_ lines: [String]) throws {
            try IndexBuildTests.load(lines, into: db)
            try db.updateIndexes()
        }

        /// Changes and writes the document of a line from ``IndexBuildTests/documents(_:seed:revisions:)``.
        func edit(_ line: String, _ change: (inout [(key: String, value: JSONValue)]) -> Void) throws {
            let id = String(line.dropFirst(9).prefix(9))
            var members = try db.document(id)!.value.objectValue!
            change(&members)
            _ = try db.put(JSONValue.object(members).jsonText)
        }

        /// Every entry of the view's rows, back-index and chunk tables, and its row count.
        func tables(_ view: String) throws -> [[UInt8]] {
            let signature = try db.designDocument("b")!.view(view)!.signature
            let tables = try db.indexes.tables(for: signature)
            return try db.environment.read { transaction in
                var entries: [[UInt8]] = []
                for (tag, table) in [(UInt8(1), tables.rows), (2, tables.back), (3, tables.chunks)] {
                    entries += try transaction.entries(of: table).map { [tag] + $0 }
                }
                let state = try db.indexes.state(signature, in: transaction)!
                entries.append(Array("rows \(state.rowCount) errors \(state.mapErrors) chunks \(state.chunksCurrent)".utf8))
                return entries
            }
        }
    }

    /// Documents with ids in no particular order (so back-index ids don't just grow).
    static func documents(_ count: Int, seed: UInt64, revisions: [String: Revision] = [:]) -> [String] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { index in
            let id = String(format: "k%08x", UInt32(truncatingIfNeeded: (UInt64(index) &* 0x9E37_79B9) % 0xFFFF_FFFF))
            let tag = random.next() % 6 == 0 ? "null" : "\"\(tags[Int(random.next() % 5)])\""
            let revision = revisions[id].map { #", "_rev": "\#($0)""# } ?? ""
            return #"{"_id": "\#(id)"\#(revision), "tag": \#(tag), "n": \#(random.next() % 1000)}"#
        }
    }

    static func load(_ lines: [String], into db: Database) throws {
        let report = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        #expect(report.rejected.isEmpty)
    }

    @Test("An index written in many small flushes, or from sorted runs merged once, equals one written in a single flush")
    func flushSizes() throws {
        let lines = Self.documents(3000, seed: 11)
        let whole = try Fixture()
        let pieces = try Fixture(batchSize: 64, bufferBytes: 16 << 10, spillFlushes: .max)
        let runs = try Fixture(batchSize: 64, bufferBytes: 16 << 10)
        for fixture in [whole, pieces, runs] {
            try fixture.index(lines)
        }
        for view in Self.views {
            let expected = try whole.tables(view)
            #expect(expected.count > (view == "none" ? 1 : 1000), "\(view) has rows")
            #expect(try pieces.tables(view) == expected, "\(view): many flushes differ from one")
            #expect(try runs.tables(view) == expected, "\(view): sorted runs differ from one flush")
        }
        // The runs' files went with the build: none is still mapped (or in the folder).
        let folder = runs.directory.url.path
        let maps = String(decoding: try #require(FileHandle(forReadingAtPath: "/proc/self/maps")).readDataToEndOfFile(), as: UTF8.self)
        #expect(!maps.split(separator: "\n").contains { $0.contains(folder) && $0.contains("settee-run") })
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/db").allSatisfy { !$0.hasPrefix("settee-run") })
    }

    @Test("An update reports the documents it maps, then the entries of new indexes merged from sorted runs, up to all of them")
    func mergeProgress() throws {
        let lines = Self.documents(3000, seed: 12)
        let runs = try Fixture(batchSize: 64, bufferBytes: 16 << 10)
        let whole = try Fixture()
        var reports: [[IndexProgress]] = []
        for fixture in [runs, whole] {
            try Self.load(lines, into: fixture.db)
            var progress: [IndexProgress] = []
            try fixture.db.updateIndexes { progress.append($0) }
            reports.append(progress)
        }
        let mapping = reports[0].filter { $0.toMerge == 0 }
        let merging = reports[0].filter { $0.toMerge > 0 }
        #expect(mapping.last?.processed == 3001 && mapping.last?.total == 3001, "every document (and the design document) mapped")
        // Merging comes after mapping, from none to all, never back.
        #expect(reports[0].firstIndex { $0.toMerge > 0 }! > reports[0].lastIndex { $0.toMerge == 0 }!)
        #expect(merging.first?.merged == 0)
        #expect(merging.last?.merged == merging.last?.toMerge)
        #expect(zip(merging, merging.dropFirst()).allSatisfy { $0.merged <= $1.merged && $0.toMerge == $1.toMerge })
        // The new indexes' rows all came from runs, and their back-index entries but
        // those that went straight into the table (the first flushes', in id order).
        let (rows, back) = try Self.views.reduce((0, 0)) { sum, view in
            let tables = try runs.tables(view)
            return (sum.0 + tables.count { $0.first == 1 }, sum.1 + tables.count { $0.first == 2 })
        }
        let toMerge = try #require(merging.last?.toMerge)
        #expect(toMerge > rows && toMerge <= rows + back, "\(toMerge) entries merged, \(rows) rows and \(back) back-index entries")
        // Built in place, nothing is merged.
        #expect(!reports[1].isEmpty && reports[1].allSatisfy { $0.toMerge == 0 && $0.merged == 0 })
    }

    @Test("Documents written in id order, their design document last: every back-index entry goes straight into the table, only rows are merged")
    func backEntriesInIDOrderWithTheDesignDocumentLast() throws {
        // Ids in order, as an import writes them; the index defined afterwards,
        // its design document (whose id sorts first) the last change.
        var random = SplitMix64(seed: 21)
        let lines = (0..<3000).map { #"{"_id": "d\#(String(format: "%05d", $0))", "tag": "\#(Self.tags[Int(random.next() % 5)])", "n": \#(random.next() % 1000)}"# }
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 2
        options.indexBatchSize = 64
        options.indexBufferBytes = 16 << 10
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try Self.load(lines, into: db)
        try db.loadDesignDocuments(from: directory.file("b.json", contents: Self.design))
        var progress: [IndexProgress] = []
        try db.updateIndexes { progress.append($0) }
        let toMerge = try #require(progress.last { $0.toMerge > 0 }?.toMerge, "built from sorted runs")
        // The same documents indexed in one flush: the tables to expect.
        let whole = try Fixture()
        try whole.index(lines)
        var rows = 0
        for view in Self.views {
            let signature = try db.designDocument("b")!.view(view)!.signature
            let tables = try db.indexes.tables(for: signature)
            let entries = try db.environment.read { transaction in
                try [tables.rows, tables.back, tables.chunks].map { try transaction.entries(of: $0) }
            }
            let expected = try whole.tables(view)
            #expect(entries[0].map { [1] + $0 } == expected.filter { $0.first == 1 }, "\(view): rows")
            #expect(entries[1].map { [2] + $0 } == expected.filter { $0.first == 2 }, "\(view): back-index entries")
            rows += entries[0].count
        }
        #expect(toMerge == rows, "\(toMerge) entries merged for \(rows) rows: back-index entries were merged too")
    }

    @Test("Rows that go in in order are written an eighth of the buffer at a time; once a write finds them scattered, the whole buffer")
    func flushSizesFollowTheKeys() throws {
        /// The write transactions a new index of `map` commits over 6,000 documents.
        func commits(map: String) throws -> Int {
            let directory = TemporaryDirectory()
            var options = Database.Options()
            options.indexBatchSize = 64
            options.indexBufferBytes = 64 << 10
            options.indexSpillFlushes = .max
            let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
            try db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id": "_design/d", "views": {"v": {"map": "\#(map)"}}}"#))
            var random = SplitMix64(seed: 17)
            try Self.load((0..<6000).map { #"{"_id": "d\#(String(format: "%05d", $0))", "n": \#($0), "r": \#(random.next() % 1_000_000)}"# }, into: db)
            let before = try db.environment.lastCommittedTransaction
            try db.updateIndexes()
            #expect(try db.query("d/v").rows.count == 6000)
            return try db.environment.lastCommittedTransaction - before
        }
        // Keys that grow with the documents append; random ones fall all over the index.
        let ordered = try commits(map: "function (doc) { emit(doc.n, null); }")
        let scattered = try commits(map: "function (doc) { emit(doc.r, null); }")
        #expect(ordered > 3 * scattered, "\(ordered) writes for keys in order, \(scattered) for scattered ones")
    }

    @Test("An index whose flushes merge its table afresh, or whose sorted runs merge into it, while the memory map grows equals one written in a single flush",
          arguments: [Int.max, 2])
    func rewritesWhileTheMapGrows(spillFlushes: Int) throws {
        let lines = Self.documents(6000, seed: 13)
        let whole = try Fixture()
        let growing = try Fixture(batchSize: 64, bufferBytes: 64 << 10, initialMapSize: 256 << 10, spillFlushes: spillFlushes)
        try IndexBuildTests.load(lines, into: growing.db)
        let imported = try growing.db.info().mapSize
        try growing.db.updateIndexes()
        #expect(try growing.db.info().mapSize > imported, "the map grew while indexing")
        try whole.index(lines)
        for view in Self.views {
            #expect(try growing.tables(view) == whole.tables(view), "\(view): differs from a single flush")
        }
    }

    @Test("A new index is built from sorted runs once its rows would take more than the flushes set, and in place below that")
    func spillRule() {
        // 3 MB gathered from 100,000 documents, 900,000 still to map: about 30 MB in all.
        func spills(flushes: Int) -> Bool {
            ViewIndexer.spills(pendingBytes: 3 << 20, pendingDocuments: 100_000, remainingDocuments: 900_000, flushBytes: 24 << 20, flushes: flushes)
        }
        #expect(spills(flushes: 1))
        #expect(!spills(flushes: 2))
        #expect(!ViewIndexer.spills(pendingBytes: 3 << 20, pendingDocuments: 100_000, remainingDocuments: 0, flushBytes: 1 << 20, flushes: 4))
    }

    @Test("Sorted runs merge in key order (equal keys in the order of their runs), through runs past the release interval; a merge taken back to a position goes on from there")
    func sortedRunMerge() throws {
        struct Entry: Equatable {
            let key: [UInt8]
            let value: [UInt8]
        }
        let directory = TemporaryDirectory()
        var random = SplitMix64(seed: 5)
        var all: [Entry] = []
        var runs: [SortedRun] = []
        for run in 0..<7 {
            // Keys of a few small bytes, so that runs share keys; an empty run; a run of
            // about 20 MB (values of 1 MB of one byte, held here as that byte and a mark,
            // larger than the run's buffer, between small ones).
            let count = run == 3 ? 0 : run == 6 ? 40 : Int(random.next() % 3000)
            let entries = (0..<count).map { _ in
                Entry(key: (0..<Int(random.next() % 5)).map { _ in UInt8(random.next() % 3) },
                      value: run == 6 && random.next() % 2 == 0 ? [UInt8(random.next() % 256), 0xFF, 0xFF] : [UInt8(run), UInt8(random.next() % 256)])
            }.enumerated().sorted { a, b in
                let order = a.element.key.lexicographicallyPrecedes(b.element.key) ? -1 : b.element.key.lexicographicallyPrecedes(a.element.key) ? 1 : 0
                return order != 0 ? order < 0 : a.offset < b.offset
            }.map(\.element)
            let file = try SortedRun(in: directory.url.path)
            for entry in entries {
                let value = entry.value.count == 3 ? [UInt8](repeating: entry.value[0], count: 1 << 20) : entry.value
                try entry.key.withUnsafeBytes { key in try value.withUnsafeBytes { try file.append(key: key, value: $0) } }
            }
            try file.finishWriting()
            #expect(file.count == count)
            runs.append(file)
            all += entries
        }
        let expected = all.enumerated().sorted { a, b in
            let order = a.element.key.lexicographicallyPrecedes(b.element.key) ? -1 : b.element.key.lexicographicallyPrecedes(a.element.key) ? 1 : 0
            return order != 0 ? order < 0 : a.offset < b.offset
        }.map(\.element)
        /// A value as `entries` hold it (a large one as its byte and a mark, once checked).
        func held(_ value: UnsafeRawBufferPointer) -> [UInt8] {
            guard value.count == 1 << 20 else { return Array(value) }
            #expect(value.allSatisfy { $0 == value[0] })
            return [value[0], 0xFF, 0xFF]
        }
        var merge = SortedRunMerge(runs)
        var merged: [Entry] = []
        var position: [Int]?
        while true {
            if merged.count == 1000 { position = merge.position }
            guard let (key, value) = merge.next() else { break }
            merged.append(Entry(key: Array(key), value: held(value)))
        }
        #expect(merged.count == expected.count)
        #expect(merged == expected)
        #expect(try #require(position).count == runs.count)
        merge.restore(try #require(position))
        var again: [Entry] = []
        while let (key, value) = merge.next() { again.append(Entry(key: Array(key), value: held(value))) }
        #expect(again == Array(merged[1000...]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty, "the runs' files have no names")
    }

    @Test("A new index from sorted runs over documents written in id order, then others between them: its back index appended, then the rest put among it, equals one written in a single flush")
    func sortedRunsOverOrderedIDs() throws {
        var random = SplitMix64(seed: 29)
        func line(_ id: String) -> String {
            let tag = random.next() % 6 == 0 ? "null" : "\"\(Self.tags[Int(random.next() % 5)])\""
            return #"{"_id": "\#(id)", "tag": \#(tag), "n": \#(random.next() % 1000)}"#
        }
        // Ids in order, then ids that fall between them, in no order.
        let ordered = (0..<2000).map { line(String(format: "m%05d", $0)) }
        let between = (0..<2000).shuffled(using: &random).map { line(String(format: "m%05d5", $0)) }
        for lines in [ordered, ordered + between] {
            let whole = try Fixture()
            let runs = try Fixture(batchSize: 64, bufferBytes: 16 << 10)
            for fixture in [whole, runs] { try fixture.index(lines) }
            for view in Self.views {
                #expect(try runs.tables(view) == whole.tables(view), "\(view), \(lines.count) documents: sorted runs differ from one flush")
            }
        }
    }

    @Test("A new index built from sorted runs on a disk that fills: a clear error, no file left, and with room it is built in full",
          .enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root"))
    func sortedRunsOnAFullDisk() throws {
        let disk = try #require(SmallFileSystem(megabytes: 16))
        let location = disk.url.appendingPathComponent("db")
        let fixture = try Fixture(batchSize: 64, bufferBytes: 16 << 10, at: location)
        let lines = Self.documents(6000, seed: 31)
        try Self.load(lines, into: fixture.db)
        try disk.fill(leaving: 32 << 10)
        let error = try #require(throws: StorageError.self) { try fixture.db.updateIndexes() }
        #expect(error.isFull && error.description.contains("sorted rows of the new index"), "\(error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: location.path).allSatisfy { !$0.hasPrefix("settee-run") })
        try disk.removeFiller()
        try fixture.db.updateIndexes()
        try fixture.expectEqualToFreshBuild("after the disk had room again")
    }

    @Test("An index recorded as new whose tables hold rows (a merge of sorted runs cut short) shows none, and is emptied first, then built in full, from runs or not",
          arguments: [2, Int.max])
    func leftoversOfAMergeCutShort(spillFlushes: Int) throws {
        let lines = Self.documents(3000, seed: 23)
        let fixture = try Fixture(batchSize: 64, bufferBytes: 16 << 10, spillFlushes: spillFlushes)
        try Self.load(lines, into: fixture.db)
        // Left as a cut-short merge leaves them: rows and back-index entries, and the state of a new index.
        for view in Self.views {
            let signature = try fixture.db.designDocument("b")!.view(view)!.signature
            let tables = try fixture.db.indexes.tables(for: signature)
            try fixture.db.environment.write { transaction in
                var state = ViewIndexState(designDocument: "b", view: view)
                state.chunksCurrent = false
                try fixture.db.indexes.setState(state, for: signature, in: transaction)
                try transaction.put(tables.rows, Array("left over".utf8), Array("1".utf8))
                try transaction.put(tables.back, Array("k00000000".utf8), Array("left over".utf8))
            }
        }
        // Read without an update, such an index has no rows (its state says so), by view query and by find's reader.
        for view in Self.views {
            var stale = ViewQueryOptions()
            stale.update = .false
            #expect(try fixture.db.query("b/\(view)", options: stale).rows.isEmpty, "\(view): rows of an index recorded as new")
            var entries = 0
            try fixture.db.readIndexEntries(designDocument: "b", view: view, IndexScan(range: .all), update: false, conflicts: false,
                                            partition: nil) { _ in entries += 1; return true }
            #expect(entries == 0, "\(view): entries of an index recorded as new")
        }
        try fixture.db.updateIndexes()
        try fixture.expectEqualToFreshBuild("after a merge cut short")
    }

    @Test("Gathered rows flush at the buffer size, unless the rest of the run fits the last flush within half a buffer more")
    func flushRule() {
        let buffer = 24 << 20
        // 24 MB from 300,000 documents: 80 bytes each so far.
        func flushes(_ bytes: Int, remaining: UInt64) -> Bool {
            ViewIndexer.flushesNow(pendingBytes: bytes, pendingDocuments: 300_000, remainingDocuments: remaining, flushBytes: buffer)
        }
        #expect(!flushes(buffer - 1, remaining: 1_000_000), "below the buffer size")
        #expect(flushes(buffer, remaining: 1_000_000), "much left to map")
        #expect(flushes(buffer, remaining: 160_000), "12.8 MB more would pass 36 MB")
        #expect(!flushes(buffer, remaining: 150_000), "12 MB more: the last flush takes it")
        #expect(!flushes(buffer, remaining: 0), "nothing left: the run's end flushes")
        #expect(ViewIndexer.flushesNow(pendingBytes: buffer, pendingDocuments: 0, remainingDocuments: 10, flushBytes: buffer))
    }

    @Test("A build whose engine call is interrupted mid-way fails with that error once the work it started is done, and the next update completes it")
    func interruptedBuild() throws {
        let interrupted = try Fixture(batchSize: 256, bufferBytes: 64 << 10)
        let lines = Self.documents(6000, seed: 91)
        try Self.load(lines, into: interrupted.db)
        let worker = try interrupted.db.javaScript().workers[0]
        var sent = false
        // A third of the way in, the next batch is already queued on the workers:
        // the first map call that worker runs after this fails.
        let error = #expect(throws: (any Error).self) {
            try interrupted.db.updateIndexes { progress in
                if !sent, progress.processed * 3 >= progress.total {
                    worker.interrupt()
                    sent = true
                }
            }
        }
        #expect(sent)
        #expect("\(error.map { "\($0)" } ?? "")".contains("interrupted"))
        // Nothing is left running or half-written: the next update finishes the
        // indexes from their checkpoints, to what a fresh build makes.
        try interrupted.db.updateIndexes()
        for info in try interrupted.db.viewInfo() {
            #expect(info.indexedSequence == (try interrupted.db.store.lastSequence()), "\(info.path)")
            #expect(info.mapErrors == 0, "\(info.path)")
        }
        try interrupted.expectEqualToFreshBuild()
    }

    @Test("A chunk pass whose JavaScript reduce call is interrupted fails the build rather than storing the error, and the next update completes it")
    func interruptedChunkPass() throws {
        let fixture = try Fixture(batchSize: 256)
        let js = #"{"_id": "_design/js", "views": {"sum": {"map": "function (doc) { if (doc.tag) emit([doc.tag, doc.n], doc.n); }", "reduce": "function (keys, values, rereduce) { return sum(values); }"}}}"#
        try fixture.db.loadDesignDocuments(from: fixture.directory.file("js.json", contents: js))
        try Self.load(Self.documents(6000, seed: 93), into: fixture.db)
        let workers = try fixture.db.javaScript().workers
        // Once every document is mapped, the next engine calls are the chunk
        // pass's reduce calls.
        #expect(throws: (any Error).self) {
            try fixture.db.updateIndexes { progress in
                if progress.processed >= progress.total { for worker in workers { worker.interrupt() } }
            }
        }
        // A worker that ran no call since keeps its interrupt for its next one:
        // a call of its own on each takes what is left.
        for worker in workers {
            try worker.run { context in _ = try? context.compile("function (doc) { emit(1, 1); }") }
        }
        try fixture.db.updateIndexes()
        func reduce(_ view: String, _ parameters: [(String, String)]) throws -> [String] {
            try fixture.db.query(view, options: ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) })).rows.map(\.valueJSON)
        }
        // Every chunk holds its sum: the JavaScript reduce agrees with `_sum` over the same rows.
        #expect(try reduce("js/sum", []) == reduce("b/by_tag", []))
        #expect(try reduce("js/sum", [("group_level", "1")]) == reduce("b/by_tag", [("group_level", "1")]))
        #expect(try reduce("js/sum", [("startkey", #"["blue", 100]"#), ("endkey", #"["red", 900]"#)])
            == reduce("b/by_tag", [("startkey", #"["blue", 100]"#), ("endkey", #"["red", 900]"#)]))
    }

    @Test("A large update over an existing index (edits, deletions, new documents) equals a build from scratch")
    func largeUpdate() throws {
        let first = Self.documents(2000, seed: 21)
        let updated = try Fixture(batchSize: 64, bufferBytes: 16 << 10)
        try updated.index(first)
        // Two thirds of the documents change: too many to keep chunks up batch by batch.
        var revisions: [String: Revision] = [:]
        for change in try updated.db.changes() { revisions[change.id] = change.revision }
        let edits = Self.documents(2000, seed: 22, revisions: revisions)
        var second = Array(edits[0..<1300])
        second += Self.documents(2600, seed: 23).suffix(600)
        try Self.load(second, into: updated.db)
        for line in first[1300..<1500] {
            let id = String(line.dropFirst(9).prefix(9))
            _ = try updated.db.delete(id, revision: try updated.db.document(id)!.revision)
        }
        try updated.db.updateIndexes()

        try updated.expectEqualToFreshBuild()
    }

    @Test("Small updates kept batch by batch equal a build from scratch")
    func smallUpdates() throws {
        let lines = Self.documents(1200, seed: 31)
        let stepwise = try Fixture(batchSize: 64)
        try stepwise.index(Array(lines[0..<1000]))
        for start in stride(from: 1000, to: 1200, by: 40) {
            try stepwise.index(Array(lines[start..<start + 40]))
        }
        let whole = try Fixture()
        try whole.index(lines)
        for view in Self.views {
            #expect(try stepwise.tables(view) == whole.tables(view), "\(view)")
        }
    }

    @Test("Rows sort by stored key: shared prefixes, keys shorter than eight bytes past them, zero bytes, keys in order already or all but the last")
    func sortedRows() {
        var random = SplitMix64(seed: 41)
        for round in 0..<60 {
            let shared = (0..<Int(random.next() % 12)).map { _ in UInt8(random.next() % 4) }
            var batch = MappedBatch()
            var keys = (0..<Int(1 + random.next() % 300)).map { _ in
                shared + (0..<Int(random.next() % 14)).map { _ in UInt8(random.next() % 3) }
            }
            if round % 3 > 0 {
                keys.sort { $0.lexicographicallyPrecedes($1) }
                // In order but for the last two: the whole sort must still run.
                if round % 3 == 2 && keys.count > 1 && keys[keys.count - 2] != keys[keys.count - 1] { keys.swapAt(keys.count - 2, keys.count - 1) }
            }
            for key in keys {
                let start = batch.bytes.count
                batch.bytes += key + [0xAB]
                batch.rows.append(MappedRow(target: 0, keyStart: Int32(start), keyLength: Int32(key.count), valueLength: 1))
            }
            var sorted = SortedRows(capacity: batch.rows.count)
            for row in batch.rows { sorted.add(row) }
            batch.bytes.withUnsafeBytes { sorted.sort(in: $0) }
            let result = sorted.entries.map { Array(batch.bytes[Int($0.keyStart)..<Int($0.keyStart + $0.keyLength)]) }
            #expect(result == keys.sorted { $0.lexicographicallyPrecedes($1) }, "round \(round)")
        }
    }

    @Test("Sorted rows go in appended, inserted (scattered or in long runs) or by rewriting the table, and each way leaves what puts would")
    func rowPlacements() throws {
        let directory = TemporaryDirectory()
        let environment = try LMDBEnvironment.open(directory: directory.url)
        var random = SplitMix64(seed: 71)
        // Four-byte keys, none starting with 0x80 0x00 (the clustered keys' prefix) or 0xFF (the appended keys').
        var existing: [[UInt8]] = []
        while existing.count < 3000 {
            let key = (0..<4).map { _ in UInt8(random.next() % 256) }
            if key[0] != 0xFF && key.prefix(2) != [0x80, 0x00] { existing.append(key) }
        }
        let scattered = (0..<1500).map { _ in (0..<4).map { _ in UInt8(random.next() % 256) } } + existing.prefix(20)
        let clustered = (0..<1500).map { [0x80, 0x00, UInt8($0 >> 8), UInt8($0 & 0xFF)] as [UInt8] }
        let appended = (0..<1500).map { [0xFF, UInt8($0 >> 8), UInt8($0 & 0xFF)] as [UInt8] }
        var tables = 0
        /// Writes `existing` (value 1) in one transaction, then `new` (value 2) sorted in the next.
        func place(_ new: [[UInt8]], over existing: [[UInt8]], mayRewrite: Bool) throws -> (SortedRows.Placement, [[UInt8]], [[UInt8]]?) {
            tables += 1
            let table = try environment.openDatabases(["t\(tables)"])[0]
            try environment.write { transaction in
                for key in existing { try transaction.put(table, key, [UInt8(1)]) }
            }
            var batch = MappedBatch()
            for key in Set(new) {
                let start = batch.bytes.count
                batch.bytes += key + [2]
                batch.rows.append(MappedRow(target: 0, keyStart: Int32(start), keyLength: Int32(key.count), valueLength: 1))
            }
            var sorted = SortedRows(capacity: batch.rows.count)
            for row in batch.rows { sorted.add(row) }
            var changed: [[UInt8]]? = []
            let placement = try batch.bytes.withUnsafeBytes { bytes in
                sorted.sort(in: bytes)
                return try environment.write { transaction in
                    try sorted.write(to: table, bytes: bytes, in: transaction, mayRewrite: mayRewrite, changed: &changed)
                }
            }
            let entries = try environment.read { try $0.entries(of: table) }
            return (placement, entries, changed)
        }
        /// What puts of `new` over `existing` leave: the new value wins.
        func expected(_ new: [[UInt8]], over existing: [[UInt8]]) -> [[UInt8]] {
            var values: [[UInt8]: UInt8] = [:]
            for key in existing { values[key] = 1 }
            for key in new { values[key] = 2 }
            return values.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { $0 + [0xEE, values[$0]!] }
        }
        let cases: [(name: String, new: [[UInt8]], over: [[UInt8]], mayRewrite: Bool, placement: SortedRows.Placement)] = [
            ("scattered", scattered, existing, true, .rewrite),
            ("scattered, no rewrite allowed", scattered, existing, false, .insert(scattered: true)),
            ("clustered between two keys", clustered, existing, true, .insert(scattered: false)),
            ("clustered, no rewrite allowed", clustered, existing, false, .insert(scattered: false)),
            ("after the last key", appended, existing, true, .append),
            ("into an empty table", scattered, [], true, .append),
        ]
        for (name, new, over, mayRewrite, placement) in cases {
            let (placed, entries, changed) = try place(new, over: over, mayRewrite: mayRewrite)
            #expect(placed == placement, "\(name)")
            #expect(entries == expected(new, over: over), "\(name): the table differs from puts")
            #expect(changed == Set(new).sorted { $0.lexicographicallyPrecedes($1) }, "\(name): the keys written")
        }
    }

    @Test("Documents written again while a large update runs: the rows gathered so far still go in, and the next update takes the rest")
    func changesRunOutEarly() throws {
        let lines = Self.documents(300, seed: 51)
        let racing = try Fixture(batchSize: 64)
        try Self.load(lines, into: racing.db)
        var rewritten = false
        try racing.db.updateIndexes { progress in
            guard !rewritten else { return }
            rewritten = true
            // Every document not yet read moves past the sequence the update runs to.
            for change in try! racing.db.changes(since: 128) {
                let document = try! racing.db.document(change.id)!
                var members = try! document.value.objectValue!
                members.removeAll { $0.key == "n" }
                members.append((key: "n", value: 7))
                _ = try! racing.db.put(JSONValue.object(members).jsonText)
            }
        }
        #expect(rewritten)
        let signature = try racing.db.designDocument("b")!.view("twice")!.signature
        let tables = try racing.db.indexes.tables(for: signature)
        let (rows, state) = try racing.db.environment.read { transaction in
            (try transaction.count(tables.rows), try racing.db.indexes.state(signature, in: transaction)!)
        }
        #expect(state.rowCount == rows)
        #expect(rows >= 128, "the rows of the documents read before the rewrite are in")
        try racing.db.updateIndexes()

        try racing.expectEqualToFreshBuild()
    }

    @Test("Edits the views don't see leave their tables untouched; edits of values alone still reach them")
    func unseenEdits() throws {
        let lines = Self.documents(1000, seed: 61)
        let db = try Fixture(batchSize: 64)
        try db.index(lines)
        let before = try Self.views.map { try db.tables($0) }
        func edit(_ change: (inout [(key: String, value: JSONValue)]) -> Void, count: Int) throws {
            for line in lines.prefix(count) { try db.edit(line, change) }
            try db.db.updateIndexes()
        }
        // A member no view reads: nothing but the checkpoint changes.
        try edit({ $0.append((key: "seen", value: true)) }, count: 40)
        for (view, tables) in zip(Self.views, before) {
            #expect(try db.tables(view) == tables, "\(view)")
        }
        // A new tag: keys of by_tag and values of twice change.
        try edit({ members in
            members.removeAll { $0.key == "tag" }
            members.append((key: "tag", value: "teal"))
        }, count: 40)
        try db.expectEqualToFreshBuild()
    }

    @Test("Updates that move nothing but the checkpoint commit nothing; the next update with rows to write commits it")
    func uncommittedCheckpoints() throws {
        let lines = Self.documents(300, seed: 67)
        let db = try Fixture(batchSize: 64)
        try db.index(lines)
        let signatures = try Self.views.map { try db.db.designDocument("b")!.view($0)!.signature }
        func committed() throws -> [UInt64] {
            try db.db.environment.read { transaction in try signatures.map { try db.db.indexes.snapshot($0, in: transaction)!.state.sequence } }
        }
        let built = try committed()
        var options = ViewQueryOptions()
        options.updateSeq = true
        func edit(_ line: String, _ change: (inout [(key: String, value: JSONValue)]) -> Void) throws -> ViewResult {
            try db.edit(line, change)
            return try db.db.query("b/by_tag", options: options)
        }
        // A member no view reads: each query is current, the committed checkpoints stay.
        for line in lines.prefix(5) {
            let result = try edit(line) { $0.append((key: "seen", value: true)) }
            #expect(result.updateSequence == (try db.db.store.lastSequence()))
        }
        let afterEdits = try committed()
        #expect(afterEdits == built, "no commit for checkpoints alone")
        let latest = try db.db.store.lastSequence()
        let current = try db.db.environment.read { transaction in try signatures.map { try db.db.indexes.state($0, in: transaction)!.sequence } }
        #expect(current == Array(repeating: latest, count: signatures.count), "the states read reflect the kept checkpoints")
        // A new tag: rows to write, and the checkpoints go in with them.
        _ = try edit(lines[10]) { members in
            members.removeAll { $0.key == "tag" }
            members.append((key: "tag", value: "teal"))
        }
        #expect(try committed() == Array(repeating: try db.db.store.lastSequence(), count: signatures.count))
        try db.expectEqualToFreshBuild()
    }

    @Test("A document the engine cannot take within its heap bound is that document's map error; the others are indexed")
    func documentTooLargeForTheEngine() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        options.javaScript.heapLimitBytes = 32 << 20
        // The document is 8 MB of JSON: over the default limit, which would refuse it before the engine sees it.
        options.maximumDocumentBytes = 16 << 20
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.loadDesignDocuments(from: directory.file("b.json", contents: Self.design))
        // A million small objects: a few MB of JSON, far more as engine objects.
        let huge = #"{"_id": "huge", "tag": "red", "n": 1, "items": ["# + Array(repeating: #"{"a":1}"#, count: 1_000_000).joined(separator: ",") + "]}"
        try Self.load(Self.documents(50, seed: 71) + [huge] + Self.documents(100, seed: 72).suffix(50), into: db)
        let result = try db.query("b/by_tag", options: ViewQueryOptions(parameters: [("reduce", "false")]))
        #expect(!result.rows.contains { $0.id == "huge" })
        #expect(result.rows.count > 60, "the other documents are indexed")
        let info = try db.viewInfo().first { $0.path == "b/by_tag" }!
        #expect(info.mapErrors == 1)
    }
}
