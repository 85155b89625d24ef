import Foundation
import Testing
import SetteeStorage
@testable import Settee

/// How many kill-and-reopen rounds to run: `SETTEE_CRASH_ITERATIONS` (`make
/// crash-test` sets it), else a few for every test run. Each round kills four
/// `settee` processes.
private let iterations = Int(ProcessInfo.processInfo.environment["SETTEE_CRASH_ITERATIONS"] ?? "") ?? 3
/// `SETTEE_CRASH_SEED` replays a failed run; its seed is printed.
private let seed = UInt64(ProcessInfo.processInfo.environment["SETTEE_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)

/// Enough documents, of about 2 KB each, that an import takes two transactions
/// (32 MB each) and a build three batches (8,192 documents each).
private let documentCount = 20_000

private func padding(_ index: Int) -> String { String(repeating: "p", count: 1800 + index % 50) }

private func documentLines() -> [String] {
    (0..<documentCount).map { #"{"_id": "\#(documentID($0))", "n": \#($0), "pad": "\#(padding($0))"}"# }
}

private let crashDesign = #"""
    {"_id": "_design/crash", "views": {
      "by_mod": {"map": "function (doc) { emit([doc.n % 7, doc.n], doc.n); }", "reduce": "_sum"},
      "thirds": {"map": "function (doc) { if (doc.n % 3 === 0) emit(doc._id, null); }", "reduce": "_count"}}}
    """#

private func documentID(_ index: Int) -> String { String(format: "doc%05d", index) }

/// Every write the test made, in sequence order, and what each index held when
/// last checked: the reference the database is checked against. `n == nil` is
/// a deletion.
private struct WriteLog {
    var writes: [(sequence: UInt64, id: String, n: Int?)] = []
    /// Per view, each document's `n` as the index held it at the last check.
    var indexed: [String: [String: Int]] = [:]

    /// What an index that reached `sequence` holds: a document whose latest
    /// write is at or before `sequence` in that version (absent when deleted);
    /// any other as the index held it before (the changes feed, as CouchDB's,
    /// keeps only each document's latest write, so a build from scratch never
    /// sees older versions).
    func expected(for view: String, at sequence: UInt64) -> [String: Int] {
        var latest: [String: (sequence: UInt64, n: Int?)] = [:]
        for write in writes { latest[write.id] = (write.sequence, write.n) }
        var state = indexed[view] ?? [:]
        for (id, write) in latest where write.sequence <= sequence {
            state[id] = write.n
        }
        return state
    }
}

/// Runs `settee` and kills it with SIGKILL after a random delay, unless it ends first.
private func runKilled(_ settee: SetteeExecutable, _ arguments: [String], within milliseconds: ClosedRange<Int>,
                       using random: inout SplitMix64, in directory: URL) throws -> Bool {
    let child = try settee.start(arguments, in: directory)
    usleep(UInt32(Int.random(in: milliseconds, using: &random)) * 1000)
    child.kill()
    let outcome = try child.wait()
    return outcome.signal == SIGKILL
}

@Suite("Crash safety", .ownThread)
struct CrashSafetyTests {
    @Test("settee killed with SIGKILL during import and index builds: acknowledged writes stay, nothing half-written shows, each index holds exactly the changes up to its recorded seq and resumes from there")
    func killedProcesses() throws {
        let settee = try SetteeExecutable.find()
        var random = SplitMix64(seed: seed)
        print("crash safety: \(iterations) rounds, SETTEE_CRASH_SEED=\(seed)")
        let windows = try KillWindows.measure(settee)
        print("crash safety: an import takes \(windows.importMilliseconds) ms here, a build \(windows.indexMilliseconds) ms; kills fall within those")
        var outcomes = KillOutcomes()
        for round in 0..<iterations {
            try killRound(settee, &random, round: round, windows: windows, outcomes: &outcomes)
        }
        print("crash safety: \(outcomes.kills) settee processes killed (the others ended first), all recovered; " +
              "docs present after a killed import: \(outcomes.importedPrefixes); " +
              "indexed seqs after a killed build: \(outcomes.indexedSequences)")
    }

    /// How long the killed commands take on this machine, unkilled, so that
    /// the random kill times fall inside their work however fast the machine is.
    struct KillWindows {
        var importMilliseconds: Int
        var indexMilliseconds: Int

        static func measure(_ settee: SetteeExecutable) throws -> KillWindows {
            let directory = TemporaryDirectory()
            let db = directory.url.appendingPathComponent("db").path
            let documents = directory.file("docs.ndjson", contents: documentLines().joined(separator: "\n"))
            func time(_ arguments: [String]) throws -> Int {
                let started = ContinuousClock.now
                let outcome = try settee.run(["--db", db] + arguments, in: directory.url)
                #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
                return Int((ContinuousClock.now - started) / .milliseconds(1))
            }
            let importTime = try time(["import", documents.path])
            _ = try time(["design", "load", directory.file("design.json", contents: crashDesign).path])
            return KillWindows(importMilliseconds: importTime, indexMilliseconds: try time(["index"]))
        }
    }

    /// What the kills left behind, to show they landed mid-work.
    struct KillOutcomes {
        var kills = 0
        var importedPrefixes: [Int] = []
        var indexedSequences: [UInt64] = []
    }

    private func killRound(_ settee: SetteeExecutable, _ random: inout SplitMix64, round: Int, windows: KillWindows,
                           outcomes: inout KillOutcomes) throws {
        let directory = TemporaryDirectory()
        let db = directory.url.appendingPathComponent("db").path
        let documents = directory.file("docs.ndjson", contents: documentLines().joined(separator: "\n"))
        let design = directory.file("design.json", contents: crashDesign)
        var log = WriteLog()

        // 1. Bulk import, killed: what is there is a prefix of the input, whole.
        if try runKilled(settee, ["--db", db, "import", documents.path], within: (windows.importMilliseconds / 2)...windows.importMilliseconds, using: &random, in: directory.url) { outcomes.kills += 1 }
        let imported = try checkImportPrefix(at: db, round: round)
        outcomes.importedPrefixes.append(imported)
        // The rerun refuses what is there (a conflict each) and writes the rest.
        let rerun = try settee.run(["--db", db, "import", documents.path], in: directory.url)
        // Status 2 says some documents were refused (the conflicts), 0 that none were.
        #expect(rerun.exitStatus == (imported > 0 ? 2 : 0), "round \(round): \(rerun.standardError)")
        #expect(rerun.standardOutput.contains(#""imported":\#(documentCount - imported)"#), "round \(round): \(rerun.standardOutput)")
        log.writes = (0..<documentCount).map { (UInt64($0 + 1), documentID($0), $0) }
        #expect(try settee.run(["--db", db, "design", "load", design.path], in: directory.url).exitStatus == 0)
        let designSequence = UInt64(documentCount + 1)

        // 2. Index build, killed: each index equals the map of the docs up to its seq.
        if try runKilled(settee, ["--db", db, "index"], within: 0...windows.indexMilliseconds, using: &random, in: directory.url) { outcomes.kills += 1 }
        outcomes.indexedSequences.append(try checkIndexes(at: db, against: &log, round: round))

        // 3. Edits and deletions, imported and killed, then imported in full.
        var edits: [(id: String, n: Int?)] = []
        var editLines: [String] = []
        try withDatabase(at: db) { database in
            for index in (0..<documentCount).shuffled(using: &random).prefix(documentCount / 5) {
                let id = documentID(index)
                let revision = try #require(try database.document(id)).revision
                if Bool.random(using: &random) {
                    edits.append((id, nil))
                    editLines.append(#"{"_id": "\#(id)", "_rev": "\#(revision)", "_deleted": true}"#)
                } else {
                    let n = index + documentCount * 2
                    edits.append((id, n))
                    editLines.append(#"{"_id": "\#(id)", "_rev": "\#(revision)", "n": \#(n)}"#)
                }
            }
        }
        let editFile = directory.file("edits.ndjson", contents: editLines.joined(separator: "\n"))
        if try runKilled(settee, ["--db", db, "import", editFile.path], within: 0...(windows.importMilliseconds / 4), using: &random, in: directory.url) { outcomes.kills += 1 }
        let applied = try withDatabase(at: db) { database in
            let changes = try database.changes(since: designSequence)
            #expect(changes.map(\.id) == edits.prefix(changes.count).map(\.id), "round \(round): edits applied in order, none half")
            return changes.count
        }
        #expect(try settee.run(["--db", db, "import", editFile.path], in: directory.url).standardOutput
            .contains(#""imported":\#(edits.count - applied)"#))
        log.writes += edits.enumerated().map { (designSequence + 1 + UInt64($0.offset), $0.element.id, $0.element.n) }

        // 4. The incremental update, killed; then resumed to the end.
        if try runKilled(settee, ["--db", db, "index"], within: 0...(windows.indexMilliseconds / 2), using: &random, in: directory.url) { outcomes.kills += 1 }
        let resumedFrom = try checkIndexes(at: db, against: &log, round: round)
        outcomes.indexedSequences.append(resumedFrom)
        let finished = try settee.run(["--db", db, "index", "--verbose"], in: directory.url)
        #expect(finished.exitStatus == 0, "round \(round): \(finished.standardError)")
        if resumedFrom < log.writes.last!.sequence {
            #expect(finished.standardError.contains("since=\(resumedFrom) "), "round \(round): indexing resumes at seq \(resumedFrom): \(finished.standardError)")
        }
        let final = try checkIndexes(at: db, against: &log, round: round)
        #expect(final == log.writes.last!.sequence)
    }

    @Test("settee killed with SIGKILL while a new index is built from sorted runs: a reader sees all of its rows or none, and the next build completes it")
    func killedSortedRunBuilds() throws {
        let settee = try SetteeExecutable.find()
        var random = SplitMix64(seed: seed)
        print("crash safety, sorted runs: SETTEE_CRASH_SEED=\(seed)")
        let directory = TemporaryDirectory()
        let pristine = directory.url.appendingPathComponent("pristine").path
        // 30,000 rows of about 2 KB: more than two 24 MB buffers, so the build goes through sorted runs.
        let count = 30_000
        let lines = (0..<count).map { index in
            #"{"_id": "r\#(String(format: "%05d", index))", "k": "\#(String(random.next() % 1_000_000_000, radix: 16))", "pad": "\#(String(repeating: "q", count: 2000))"}"#
        }
        let documents = directory.file("docs.ndjson", contents: lines.joined(separator: "\n"))
        let design = directory.file("design.json", contents: #"{"_id": "_design/runs", "views": {"by_k": {"map": "function (doc) { emit(doc.k, doc.pad); }", "reduce": "_count"}}}"#)
        #expect(try settee.run(["--db", pristine, "import", documents.path], in: directory.url).exitStatus == 0)
        #expect(try settee.run(["--db", pristine, "design", "load", design.path], in: directory.url).exitStatus == 0)
        /// What the view's rows are, read one by one without an update (how
        /// many, and a hash of their ids, keys and values' lengths in order:
        /// the rows are 60 MB), and its indexed sequence.
        struct Rows: Equatable {
            var count = 0
            var hash = Hasher()
            var sequence: UInt64 = 0
            /// Entries in the index's rows table, whatever its state says (rows a merge left).
            var stored = 0
            static func == (a: Rows, b: Rows) -> Bool {
                a.count == b.count && a.hash.finalize() == b.hash.finalize() && a.sequence == b.sequence
            }
        }
        func rows(at path: String) throws -> Rows {
            try withDatabase(at: path) { database in
                var stale = ViewQueryOptions()
                stale.update = .false
                stale.reduce = false
                var rows = Rows()
                try database.forEachRow("runs/by_k", options: stale) { row in
                    rows.count += 1
                    rows.hash.combine(row.id)
                    rows.hash.combine(row.keyJSON)
                    rows.hash.combine(row.valueJSON.utf8.count)
                }
                rows.sequence = try database.viewInfo().first { $0.path == "runs/by_k" }?.indexedSequence ?? 0
                let tables = try database.indexes.tables(for: try #require(database.designDocument("runs")?.view("by_k")).signature)
                rows.stored = try database.environment.read { try $0.count(tables.rows) }
                return rows
            }
        }
        // A build unkilled, for its rows and how long it takes here.
        let reference = directory.url.appendingPathComponent("reference").path
        try FileManager.default.copyItem(atPath: pristine, toPath: reference)
        let started = ContinuousClock.now
        let built = try settee.run(["--db", reference, "index", "--verbose"], in: directory.url)
        let milliseconds = Int((ContinuousClock.now - started) / .milliseconds(1))
        #expect(built.exitStatus == 0 && built.standardError.contains("merging the sorted runs"), "\(built.standardError)")
        let expected = try rows(at: reference)
        #expect(expected.count == count && expected.sequence == UInt64(count + 1))
        var seen: [String] = []
        for round in 0..<iterations {
            let path = directory.url.appendingPathComponent("round\(round)").path
            try FileManager.default.copyItem(atPath: pristine, toPath: path)
            defer { try? FileManager.default.removeItem(atPath: path) }
            // Killed late: while the runs merge, or before, or once the build ended.
            let killed = try runKilled(settee, ["--db", path, "index"], within: (milliseconds * 3 / 4)...(milliseconds * 5 / 4), using: &random, in: directory.url)
            let after = try rows(at: path)
            #expect(after.sequence == 0 ? after.count == 0 : after == expected, "round \(round): \(after.count) rows at seq \(after.sequence)")
            seen.append(killed ? "killed, \(after.count) rows shown at seq \(after.sequence) (\(after.stored) in its table)" : "ended first")
            #expect(try settee.run(["--db", path, "index"], in: directory.url).exitStatus == 0)
            #expect(try rows(at: path) == expected, "round \(round): the build after the kill")
        }
        print("crash safety, sorted runs: a build takes \(milliseconds) ms here; \(seen.joined(separator: "; "))")
    }

    @Test("A database that fills its size limit while indexing: a clear error, nothing committed lost, and the build resumes with room")
    func fullWhileIndexing() throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("db").path
        let count = 6000
        var log = WriteLog()
        log.writes = (0..<count).map { (UInt64($0 + 1), documentID($0), $0) }
        var options = Database.Options()
        options.javaScriptWorkers = 1
        options.initialMapSize = 1 << 20
        options.maximumSize = 2 << 20
        do {
            let capped = try Database(at: URL(fileURLWithPath: path), options: options)
            let lines = (0..<count).map { #"{"_id": "\#(documentID($0))", "n": \#($0), "pad": "\#(String(repeating: "p", count: 100))"}"# }
            #expect(try capped.importDocuments(Data(lines.joined(separator: "\n").utf8)).imported == count)
            try capped.loadDesignDocuments(from: directory.file("design.json", contents: crashDesign))
            let error = try #require(throws: StorageError.self) {
                _ = try capped.query("crash/by_mod", options: ViewQueryOptions(parameters: []))
            }
            #expect(error.isFull, "\(error)")
            #expect(error.description.contains("size limit"), "\(error)")
            // Still writable where there is room, and readable.
            #expect(try capped.document(documentID(count - 1)) != nil)
        }
        // Reopened: every document is there, each index is what it was at its seq.
        let reached = try checkIndexes(at: path, against: &log, round: 0)
        #expect(try withDatabase(at: path) { try $0.changes().count } == count + 1)
        // With room, the build resumes and completes.
        options.maximumSize = nil
        do {
            let roomy = try Database(at: URL(fileURLWithPath: path), options: options)
            _ = try roomy.query("crash/by_mod", options: ViewQueryOptions(parameters: []))
            _ = try roomy.query("crash/thirds", options: ViewQueryOptions(parameters: []))
        }
        #expect(try checkIndexes(at: path, against: &log, round: 0) == UInt64(count + 1))
        print("full database: the build stopped at seq \(reached) of \(count + 1) and resumed")
    }

    @Test("A full disk (a small tmpfs) while importing and indexing: a clear error, nothing committed lost, and the build resumes with room",
          .enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root"))
    func fullDisk() throws {
        let disk = try #require(SmallFileSystem(megabytes: 8))
        let path = disk.url.appendingPathComponent("db").path
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let count = 3000
        var log = WriteLog()
        log.writes = (0..<count).map { (UInt64($0 + 1), documentID($0), $0) }
        let lines = (0..<count).map { #"{"_id": "\#(documentID($0))", "n": \#($0), "pad": "\#(String(repeating: "p", count: 200))"}"# }
        let design = FileManager.default.temporaryDirectory.appendingPathComponent("full-disk-design-\(UUID().uuidString).json")
        try Data(crashDesign.utf8).write(to: design)
        defer { try? FileManager.default.removeItem(at: design) }
        do {
            let db = try Database(at: URL(fileURLWithPath: path), options: options)
            #expect(try db.importDocuments(Data(lines.joined(separator: "\n").utf8)).imported == count)
            try db.loadDesignDocuments(from: design)
            try disk.fill(leaving: 64 << 10)
            // An index build that cannot fit fails with the reason.
            let indexError = try #require(throws: StorageError.self) {
                _ = try db.query("crash/by_mod", options: ViewQueryOptions(parameters: []))
            }
            #expect(indexError.isFull && indexError.description.contains("No space left on device"), "\(indexError)")
            // So does an import, whole.
            let more = (count..<(count + 20_000)).map { #"{"_id": "\#(documentID($0))", "pad": "\#(String(repeating: "p", count: 200))"}"# }
            let importError = try #require(throws: StorageError.self) { _ = try db.importDocuments(Data(more.joined(separator: "\n").utf8)) }
            #expect(importError.isFull && importError.description.contains("No space left on device"), "\(importError)")
            #expect(try db.lastSequence() == UInt64(count + 1))
        }
        let reached = try checkIndexes(at: path, against: &log, round: 0)
        #expect(try withDatabase(at: path) { try $0.changes().count } == count + 1)
        try disk.removeFiller()
        do {
            let db = try Database(at: URL(fileURLWithPath: path), options: options)
            _ = try db.query("crash/by_mod", options: ViewQueryOptions(parameters: []))
            _ = try db.query("crash/thirds", options: ViewQueryOptions(parameters: []))
        }
        #expect(try checkIndexes(at: path, against: &log, round: 0) == UInt64(count + 1))
        print("full disk: the build stopped at seq \(reached) of \(count + 1) and resumed once the disk had room")
    }

    /// The documents present are the first ones of the input, each whole, with
    /// sequence numbers 1…k and nothing else. Returns k.
    private func checkImportPrefix(at path: String, round: Int) throws -> Int {
        try withDatabase(at: path) { database in
            let changes = try database.changes()
            #expect(changes.map(\.id) == (0..<changes.count).map(documentID), "round \(round): an import prefix, no holes")
            #expect(changes.map(\.sequence) == (0..<changes.count).map { UInt64($0 + 1) })
            #expect(try database.lastSequence() == UInt64(changes.count))
            // The kept counts commit in the same transaction as the writes: exact after the crash.
            let info = try database.info()
            #expect(info.documentCount == changes.count && info.deletedDocumentCount == 0, "round \(round): \(info)")
            #expect(try database.environment.read { try database.store.keptCounts(in: $0) } == DocumentCounts(live: changes.count, deleted: 0),
                    "round \(round): the kept counts")
            for change in changes {
                let index = Int(change.id.dropFirst(3))!
                let document = try #require(try database.document(change.id))
                #expect(document.json.hasSuffix(#""n":\#(index),"pad":"\#(padding(index))"}"#))
            }
            return changes.count
        }
    }

    /// Each view's rows and reductions, read without updating, are exactly what
    /// its recorded seq says (see ``WriteLog/expected(for:at:)``): nothing half
    /// of a batch, nothing missing. Returns the smallest seq.
    @discardableResult
    private func checkIndexes(at path: String, against log: inout WriteLog, round: Int) throws -> UInt64 {
        try withDatabase(at: path) { database in
            let views = try database.viewInfo()
            var smallest = UInt64.max
            for view in ["crash/by_mod", "crash/thirds"] {
                let sequence = views.first { $0.path == view }?.indexedSequence ?? 0
                smallest = min(smallest, sequence)
                let state = log.expected(for: view, at: sequence)
                log.indexed[view] = state
                let stale: [(name: String, value: String)] = [("update", "false"), ("reduce", "false")]
                let rows = try database.query(view, options: ViewQueryOptions(parameters: stale)).rows
                let total = try database.query(view, options: ViewQueryOptions(parameters: [("update", "false")])).rows.first?.valueJSON
                if view == "crash/by_mod" {
                    let expected = state.sorted { ($0.value % 7, $0.value) < ($1.value % 7, $1.value) }
                    #expect(rows.map(\.id) == expected.map(\.key), "round \(round): \(view) at seq \(sequence)")
                    #expect(rows.map(\.keyJSON) == expected.map { "[\($0.value % 7),\($0.value)]" })
                    #expect(rows.map(\.valueJSON) == expected.map { "\($0.value)" })
                    #expect(total == (expected.isEmpty ? nil : "\(expected.reduce(0) { $0 + $1.value })"), "round \(round): \(view) _sum at seq \(sequence)")
                } else {
                    let expected = state.filter { $0.value % 3 == 0 }.keys.sorted()
                    #expect(rows.map(\.id) == expected, "round \(round): \(view) at seq \(sequence)")
                    #expect(total == (expected.isEmpty ? nil : "\(expected.count)"), "round \(round): \(view) _count at seq \(sequence)")
                }
            }
            return smallest
        }
    }
}

/// Opens the database in this process for one check, and closes it after.
private func withDatabase<T>(at path: String, _ body: (Database) throws -> T) throws -> T {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    let database = try Database(at: URL(fileURLWithPath: path), options: options)
    return try body(database)
}

