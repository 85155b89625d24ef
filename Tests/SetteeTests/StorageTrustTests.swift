import CSetteeLMDB
import Foundation
import Testing
@testable import Settee
@_spi(LMDB) import SetteeStorage

/// The processes LMDB's reader table lists for an environment (one entry per
/// reader slot in use, live or left behind by a dead process).
private func readerProcesses(_ environment: LMDBEnvironment) -> [pid_t] {
    final class Lines { var text = "" }
    let lines = Lines()
    _ = withExtendedLifetime(lines) {
        mdb_reader_list(environment.environment, { message, context in
            let lines = Unmanaged<Lines>.fromOpaque(context!).takeUnretainedValue()
            lines.text += String(cString: message!)
            return 0
        }, Unmanaged.passUnretained(lines).toOpaque())
    }
    // A header line, then "<pid> <thread> <txnid>" per slot.
    return lines.text.split(separator: "\n").compactMap { line in
        line.split(separator: " ").first.flatMap { pid_t($0) }
    }
}

/// Waits for `child` to end, at most `seconds`; kills it past that. Returns
/// the outcome and whether it had to be killed.
private func waitAtMost(_ seconds: Double, for child: ChildProcess) throws -> (outcome: ChildProcess.Outcome, killed: Bool) {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if hasEnded(child) { return (try child.wait(), false) }
        usleep(10_000)
    }
    child.kill()
    return (try child.wait(), true)
}

/// Whether `child` has ended. Peeks without reaping, so that `wait()` still
/// collects the outcome (`si_signo` stays 0 while the child runs).
private func hasEnded(_ child: ChildProcess) -> Bool {
    var info = siginfo_t()
    return waitid(P_PID, id_t(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo != 0
}

/// Waits until `condition` holds, at most `seconds`.
private func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// A database of `count` documents of about 1 KB each, written and closed.
private func makeDatabase(at url: URL, documents count: Int) throws {
    let db = try Database(at: url)
    let lines = (0..<count).map { #"{"_id": "doc\#($0)", "n": \#($0), "pad": "\#(String(repeating: "p", count: 1000))"}"# }
    _ = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
}

/// Writes a plain LMDB environment in `directory`, as another program would:
/// named tables with the given records, nothing of Settee's.
private func writeForeignEnvironment(at directory: URL, tables: [String: [(key: String, value: [UInt8])]]) throws {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var env: OpaquePointer?
    try check(mdb_env_create(&env), "creating")
    defer { mdb_env_close(env) }
    try check(mdb_env_set_maxdbs(env, 8), "configuring")
    try check(mdb_env_open(env, directory.path, 0, 0o644), "opening")
    var txn: OpaquePointer?
    try check(mdb_txn_begin(env, nil, 0, &txn), "beginning")
    for (name, records) in tables {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi), "creating \(name)")
        for (key, value) in records {
            var keyBytes = Array(key.utf8)
            var valueBytes = value
            try keyBytes.withUnsafeMutableBytes { keyBuffer in
                try valueBytes.withUnsafeMutableBytes { valueBuffer in
                    var k = MDB_val(mv_size: keyBuffer.count, mv_data: keyBuffer.baseAddress)
                    var v = MDB_val(mv_size: valueBuffer.count, mv_data: valueBuffer.baseAddress)
                    try check(mdb_put(txn, dbi, &k, &v, 0), "writing")
                }
            }
        }
    }
    try check(mdb_txn_commit(txn), "committing")
}

/// The names in an LMDB environment's main table (its named tables, for a
/// Settee database or the foreign ones above).
private func mainTableNames(at directory: URL) throws -> [String] {
    var env: OpaquePointer?
    try check(mdb_env_create(&env), "creating")
    defer { mdb_env_close(env) }
    try check(mdb_env_set_maxdbs(env, 8), "configuring")
    try check(mdb_env_open(env, directory.path, UInt32(MDB_RDONLY), 0o644), "opening")
    var txn: OpaquePointer?
    try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "beginning")
    defer { mdb_txn_abort(txn) }
    var main = MDB_dbi()
    try check(mdb_dbi_open(txn, nil, 0, &main), "opening the main table")
    var cursor: OpaquePointer?
    try check(mdb_cursor_open(txn, main, &cursor), "reading")
    defer { mdb_cursor_close(cursor) }
    var names: [String] = []
    var key = MDB_val(), value = MDB_val()
    var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
    while code == 0 {
        names.append(String(decoding: UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size), as: UTF8.self))
        code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
    }
    return names
}

/// Runs `body` in a write transaction on the LMDB environment in
/// `directory`, opened as a plain LMDB program would (Settee's closed).
private func rawWrite(at directory: URL, _ body: (OpaquePointer?) throws -> Void) throws {
    var env: OpaquePointer?
    try check(mdb_env_create(&env), "creating")
    defer { mdb_env_close(env) }
    try check(mdb_env_set_maxdbs(env, 8), "configuring")
    try check(mdb_env_open(env, directory.path, 0, 0o644), "opening")
    var txn: OpaquePointer?
    try check(mdb_txn_begin(env, nil, 0, &txn), "beginning")
    do {
        try body(txn)
    } catch {
        mdb_txn_abort(txn)
        throw error
    }
    try check(mdb_txn_commit(txn), "committing")
}


/// What `body` threw, in words; nil when it threw nothing.
private func errorText(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch {
        return "\(error)"
    }
}

private func errorCode(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch {
        return (error as? any SetteeError)?.errorCode.rawValue ?? "\(error)"
    }
}

@Suite("Storage faults: dead readers, stopped writers, damaged and foreign files", .ownThread)
struct StorageTrustTests {
    @Test("A data file truncated while this process has the database open is refused by the next open, which shares the open storage")
    func truncatedWhileOpen() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        try makeDatabase(at: url, documents: 2000)
        let first = try Database(at: url)
        var info = MDB_envinfo()
        var stats = MDB_stat()
        let environment = try first.environment.environment
        mdb_env_info(environment, &info)
        mdb_env_stat(environment, &stats)
        let lastPageEnd = (info.me_last_pgno + 1) * Int(stats.ms_psize)
        #expect(truncate(url.appendingPathComponent("data.mdb").path, off_t(lastPageEnd - Int(stats.ms_psize))) == 0)
        #expect(errorCode { _ = try Database(at: url) } == "database_damaged")
        withExtendedLifetime(first) {}
    }

    @Test("A reader process killed with SIGKILL: its reader slot is cleared when another process opens the database, and by a long-lived process before it writes")
    func deadReadersAreCleared() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        // This process keeps the database open throughout, as a server would.
        let db = try Database(at: url)
        try db.put(#"{"_id": "a"}"#)

        /// Starts a process that reads and then waits, and kills it once its reader slot shows.
        func killReader() throws -> pid_t {
            let reader = try settee.start(["changes", "--continuous", "--db", url.path], in: directory.url)
            let environment = try db.environment
            let registered = eventually(20) { readerProcesses(environment).contains(reader.pid) }
            reader.kill()
            _ = try reader.wait()
            #expect(registered, "the reader's slot shows while it runs")
            #expect(try readerProcesses(db.environment).contains(reader.pid), "a killed reader leaves its slot")
            return reader.pid
        }

        let first = try killReader()
        let opened = try settee.run(["info", "--db", url.path], in: directory.url)
        #expect(opened.exitStatus == 0, "\(opened.standardError)")
        #expect(try !readerProcesses(db.environment).contains(first), "opening the database cleared the dead reader's slot")

        let second = try killReader()
        // A long-lived process looks for dead readers at most once a second.
        Thread.sleep(forTimeInterval: 1.1)
        try db.put(#"{"_id": "b"}"#)
        #expect(try !readerProcesses(db.environment).contains(second), "a write of the long-lived process cleared the dead reader's slot")
    }

    @Test("A truncated data file is refused at open with a clear error; no command crashes on it",
          arguments: ["half", "8 KB", "last page"])
    func truncatedDataFile(_ truncation: String) throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        try makeDatabase(at: url, documents: 2000)
        let file = url.appendingPathComponent("data.mdb").path
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        // Where LMDB's last page in use ends: the file may run past it (pages
        // it grew into that no commit uses), and cutting those is no damage.
        // Read with LMDB alone, read-only: opening a Database here would keep
        // this process's environment (and whatever it does at open) in play.
        let lastPageEnd = try {
            var env: OpaquePointer?
            try check(mdb_env_create(&env), "creating")
            defer { mdb_env_close(env) }
            try check(mdb_env_set_maxdbs(env, 4096), "setting the tables")
            try check(mdb_env_open(env, url.path, UInt32(MDB_RDONLY), 0o644), "opening")
            var info = MDB_envinfo()
            var stats = MDB_stat()
            mdb_env_info(env, &info)
            mdb_env_stat(env, &stats)
            return (info.me_last_pgno + 1) * Int(stats.ms_psize)
        }()
        let newSize = switch truncation {
        case "half": size / 2
        case "8 KB": 8192
        default: min(size, lastPageEnd) - Int(sysconf(Int32(_SC_PAGESIZE)))
        }
        #expect(truncate(file, off_t(newSize)) == 0)

        #expect(errorCode { _ = try Database(at: url) } == "database_damaged",
                "\(size) bytes cut to \(newSize); the last page ends at \(lastPageEnd): \(errorText { _ = try Database(at: url) } ?? "opened")")
        for arguments in [["put", #"{"_id": "new"}"#], ["get", "doc1"], ["info"], ["all-docs"]] {
            let outcome = try settee.run(arguments + ["--db", url.path], in: directory.url)
            #expect(outcome.signal == nil && outcome.exitStatus == 1, "\(arguments[0]): \(outcome.signal.map { "signal \($0)" } ?? outcome.standardError)")
            #expect(outcome.standardError.contains("truncated"), "\(arguments[0]): \(outcome.standardError)")
        }
    }

    @Test("A process holding the write lock (stopped mid-write): other processes still open and read at once, and a write fails after the busy timeout saying why")
    func stoppedWriter() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let db = try Database(at: url)
        try db.put(#"{"_id": "a", "n": 1}"#)

        // This process holds a write transaction open, as a writer stopped with SIGSTOP would.
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let writer = Thread {
            _ = try? db.environment.write { _ in
                holding.signal()
                release.wait()
            }
            ended.signal()
        }
        writer.start()
        holding.wait()
        defer {
            release.signal()
            ended.wait()
        }

        for arguments in [["get", "a"], ["info"], ["all-docs"], ["changes"]] {
            let started = Date()
            let (outcome, killed) = try waitAtMost(20, for: try settee.start(arguments + ["--db", url.path], in: directory.url))
            #expect(!killed && outcome.exitStatus == 0, "\(arguments[0]) answers while another process writes: \(outcome.standardError)")
            #expect(Date().timeIntervalSince(started) < 10, "\(arguments[0]) did not wait for the writer")
        }

        let started = Date()
        let (outcome, killed) = try waitAtMost(20, for: try settee.start(["put", "--busy-timeout", "1", #"{"_id": "b"}"#, "--db", url.path], in: directory.url))
        let elapsed = Date().timeIntervalSince(started)
        #expect(!killed, "the write gave up after its busy timeout")
        #expect(outcome.exitStatus == 1, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("write lock"), "\(outcome.standardError)")
        #expect(elapsed >= 1 && elapsed < 10, "waited \(elapsed) s")
    }

    @Test("Another program's LMDB file with a docs table is refused, left as it was, and no command crashes on it")
    func foreignEnvironment() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("foreign")
        try writeForeignEnvironment(at: url, tables: ["docs": [("k1", Array("short".utf8)), ("k2", [1, 2, 3])]])

        #expect(errorCode { _ = try Database(at: url) } == "not_a_settee_database")
        for arguments in [["get", "k1"], ["all-docs"], ["info"], ["put", #"{"_id": "x"}"#]] {
            let outcome = try settee.run(arguments + ["--db", url.path], in: directory.url)
            #expect(outcome.signal == nil && outcome.exitStatus == 1, "\(arguments[0]): \(outcome.signal.map { "signal \($0)" } ?? outcome.standardError)")
            #expect(outcome.standardError.contains("not a Settee database"), "\(arguments[0]): \(outcome.standardError)")
        }
        #expect(try mainTableNames(at: url) == ["docs"], "nothing of Settee's was added to the other program's file")
    }

    @Test("A document record too short for its header: commands say the database is damaged, none crashes")
    func damagedRecords() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        do {
            let db = try Database(at: url)
            try db.put(#"{"_id": "good"}"#)
            try db.environment.write { transaction in
                try transaction.put(db.store.docs, Array("short".utf8), [1, 2, 3] as [UInt8])
            }
        }
        for arguments in [["get", "short"], ["all-docs"], ["put", #"{"_id": "short", "_rev": "1-00000000000000000000000000000000"}"#]] {
            let outcome = try settee.run(arguments + ["--db", url.path], in: directory.url)
            #expect(outcome.signal == nil && outcome.exitStatus == 1, "\(arguments[0]): \(outcome.signal.map { "signal \($0)" } ?? outcome.standardError)")
            #expect(outcome.standardError.contains("damaged"), "\(arguments[0]): \(outcome.standardError)")
        }
        let good = try settee.run(["get", "good", "--db", url.path], in: directory.url)
        #expect(good.exitStatus == 0, "\(good.standardError)")
        // info reads the kept counts, not the records: it answers, and verify names the damage.
        let info = try settee.run(["info", "--db", url.path], in: directory.url)
        #expect(info.exitStatus == 0, "\(info.standardError)")
        let verify = try settee.run(["verify", "--db", url.path], in: directory.url)
        #expect(verify.exitStatus == 1 && verify.standardOutput.contains("short"), "\(verify.standardOutput)")
    }

    @Test("A Settee database from before the format record is adopted (read-only, it is read as it is); a newer format version is refused")
    func formatRecord() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        do {
            let db = try Database(at: url)
            try db.put(#"{"_id": "a"}"#)
        }
        #expect(try mainTableNames(at: url).contains("settee"), "a new database has its format record")
        try rawWrite(at: url) { txn in
            var dbi = MDB_dbi()
            try check(mdb_dbi_open(txn, "settee", 0, &dbi), "opening")
            try check(mdb_drop(txn, dbi, 1), "dropping")
        }
        var readOnly = Database.Options()
        readOnly.readOnly = true
        do {
            let db = try Database(at: url, options: readOnly)
            #expect(try db.document("a") != nil)
        }
        #expect(try !mainTableNames(at: url).contains("settee"), "a read-only open changes nothing")
        do {
            let db = try Database(at: url)
            #expect(try db.document("a") != nil)
        }
        #expect(try mainTableNames(at: url).contains("settee"), "adopted: the record is written")

        try rawWrite(at: url) { txn in
            var dbi = MDB_dbi()
            try check(mdb_dbi_open(txn, "settee", 0, &dbi), "opening")
            var key = Array("format".utf8)
            var value = Array(#"{"format":"settee","version":2}"#.utf8)
            try key.withUnsafeMutableBytes { keyBuffer in
                try value.withUnsafeMutableBytes { valueBuffer in
                    var k = MDB_val(mv_size: keyBuffer.count, mv_data: keyBuffer.baseAddress)
                    var v = MDB_val(mv_size: valueBuffer.count, mv_data: valueBuffer.baseAddress)
                    try check(mdb_put(txn, dbi, &k, &v, 0), "writing")
                }
            }
        }
        let error = try #require(throws: StorageError.self) { _ = try Database(at: url) }
        #expect(error.errorCode == .notSetteeDatabase)
        #expect(error.description.contains("newer Settee"), "\(error)")
    }

    @Test("A damaged document record, read through the library: database_damaged naming the document, the others still readable")
    func damagedRecordsInProcess() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(#"{"_id": "good"}"#)
        try db.environment.write { transaction in
            try transaction.put(db.store.docs, Array("short".utf8), [1, 2, 3] as [UInt8])
            try transaction.put(db.store.docs, Array("nobody".utf8), [UInt8](repeating: 0, count: 40))
        }
        for id in ["short", "nobody"] {
            let error = try #require(throws: StorageError.self) { _ = try db.document(id) }
            #expect(error.errorCode == .databaseDamaged)
            #expect(error.description.contains(#"document "\#(id)""#), "\(error)")
        }
        #expect(errorCode { _ = try db.allDocuments(options: ViewQueryOptions(parameters: [])) } == "database_damaged")
        // The kept counts are read, not the records: info answers; verify names the damage.
        #expect(try db.info().documentCount == 1)
        #expect(try db.verify().problems.contains { $0.contains(#"document "short""#) })
        #expect(try db.document("good") != nil)

        // A key of the changes feed that is not a sequence number.
        let other = try Database(at: directory.url.appendingPathComponent("other"))
        try other.put(#"{"_id": "a"}"#)
        try other.environment.write { transaction in
            try transaction.put(other.store.seqs, [0xFF, 0xFF, 0xFF] as [UInt8], Array("a".utf8))
        }
        let error = try #require(throws: StorageError.self) { _ = try other.changes() }
        #expect(error.errorCode == .databaseDamaged)
        #expect(error.description.contains("changes feed"), "\(error)")
    }

    @Test("Opened read-only: reads work, writes fail with read_only and a clear reason, and a missing table is not created")
    func readOnlyOption() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        do {
            let db = try Database(at: url)
            try db.put(#"{"_id": "a", "n": 1}"#)
        }
        var options = Database.Options()
        options.readOnly = true
        let db = try Database(at: url, options: options)
        #expect(try db.document("a")?.json.contains(#""n":1"#) == true)
        #expect(try db.info().documentCount == 1)
        let error = try #require(throws: StorageError.self) { try db.put(#"{"_id": "b"}"#) }
        #expect(error.errorCode == .readOnly)
        #expect(error.description.contains("read-only"), "\(error)")
        #expect(try db.document("b") == nil)
    }

    @Test("settee --read-only reads, refuses writes with a clear error; a missing database is not created read-only")
    func readOnlyCommand() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        #expect(try settee.run(["put", #"{"_id": "a"}"#, "--db", url.path], in: directory.url).exitStatus == 0)
        let get = try settee.run(["get", "a", "--read-only", "--db", url.path], in: directory.url)
        #expect(get.exitStatus == 0, "\(get.standardError)")
        let put = try settee.run(["put", #"{"_id": "b"}"#, "--read-only", "--db", url.path], in: directory.url)
        #expect(put.exitStatus == 1)
        #expect(put.standardError.contains("read-only"), "\(put.standardError)")
        let missing = directory.url.appendingPathComponent("missing")
        let created = try settee.run(["put", #"{"_id": "b"}"#, "--read-only", "--db", missing.path], in: directory.url)
        #expect(created.exitStatus == 1)
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    @Test("settee verify: a sound database passes; damaged records, a broken changes feed and an index that lost rows are each named")
    func verifyCommand() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        var options = Database.Options()
        options.javaScriptWorkers = 1
        do {
            let db = try Database(at: url, options: options)
            for n in 0..<50 { try db.put(#"{"_id": "doc\#(n)", "n": \#(n)}"#) }
            try db.delete("doc7", revision: nil)
            try db.loadDesignDocuments(from: directory.file("app.json", contents: #"""
                {"_id": "_design/app", "views": {"by_n": {"map": "function (doc) { if (doc.n !== undefined) { emit(doc.n, null); emit([doc.n], 1); } }"}}}
                """#))
            _ = try db.query("app/by_n", options: ViewQueryOptions(parameters: []))
        }
        let sound = try settee.run(["verify", "--db", url.path], in: directory.url)
        #expect(sound.exitStatus == 0, "\(sound.standardOutput)\(sound.standardError)")
        #expect(sound.standardOutput.contains(#""ok":true"#), "\(sound.standardOutput)")

        do {
            let db = try Database(at: url, options: options)
            let signature = try #require(try db.viewInfo().first?.signature)
            let tables = try db.indexes.tables(for: signature)
            try db.environment.write { transaction in
                try transaction.put(db.store.docs, Array("short".utf8), [1, 2, 3] as [UInt8])
                // A whole header and braces, but not JSON inside.
                try transaction.put(db.store.docs, Array("garbled".utf8), [UInt8](repeating: 0, count: 29) + Array("{nope}".utf8))
                // doc3 loses its entry in the changes feed.
                let doc3 = try #require(try db.store.record("doc3", in: transaction))
                try withUnsafeBytes(of: doc3.sequence.bigEndian) { _ = try transaction.delete(db.store.seqs, $0) }
                // The index loses its first row.
                try transaction.withCursor(tables.rows) { cursor in
                    _ = try cursor.first()
                    try cursor.deleteCurrent()
                }
            }
        }
        let damaged = try settee.run(["verify", "--db", url.path], in: directory.url)
        #expect(damaged.signal == nil && damaged.exitStatus == 1, "\(damaged.standardError)")
        let report = damaged.standardOutput
        #expect(report.contains(#""ok":false"#), "\(report)")
        for expected in [#"document \"short\""#, #"document \"garbled\""#, #"document \"doc3\""#, "app/by_n"] {
            #expect(report.contains(expected), "\(expected) in \(report)")
        }
    }

    @Test("A damaged row of a view index: the query fails with database_damaged naming the view and its index")
    func damagedIndexRowNamesTheView() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        for n in 0..<20 { try db.put(#"{"_id": "doc\#(n)", "n": \#(n)}"#) }
        try db.loadDesignDocuments(from: directory.file("app.json", contents: #"""
            {"_id": "_design/app", "views": {"by_n": {"map": "function (doc) { emit(doc.n, doc._id); }"}}}
            """#))
        _ = try db.query("app/by_n", options: ViewQueryOptions(parameters: []))
        let signature = try #require(try db.viewInfo().first?.signature)
        let tables = try db.indexes.tables(for: signature)
        try db.environment.write { transaction in
            try transaction.withCursor(tables.rows) { cursor in
                let (key, _) = try #require(try cursor.first())
                try transaction.put(tables.rows, Array(key), [0xFF, 0xFF, 0xFF] as [UInt8])
            }
        }
        do {
            _ = try db.query("app/by_n", options: ViewQueryOptions(parameters: [("update", "false")]))
            Issue.record("a damaged row was read without an error")
        } catch let error as StorageError {
            #expect(error.errorCode == .databaseDamaged)
            #expect(error.description.contains("app/by_n") && error.description.contains(signature), "\(error)")
        }
    }

    @Test("Database.verify: rows whose bytes are garbage, a changes entry naming a missing document, each reported in words without trapping")
    func verifyGarbage() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        for n in 0..<20 { try db.put(#"{"_id": "doc\#(n)", "n": \#(n)}"#) }
        try db.loadDesignDocuments(from: directory.file("app.json", contents: #"""
            {"_id": "_design/app", "views": {"by_n": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, doc._id); }"}}}
            """#))
        _ = try db.query("app/by_n", options: ViewQueryOptions(parameters: []))
        let sound = try db.verify()
        #expect(sound.isIntact, "\(sound.problems)")
        let signature = try #require(try db.viewInfo().first?.signature)
        let tables = try db.indexes.tables(for: signature)
        try db.environment.write { transaction in
            var keys: [[UInt8]] = []
            try transaction.withCursor(tables.rows) { cursor in
                var entry = try cursor.first()
                while let (key, _) = entry, keys.count < 3 {
                    keys.append(Array(key))
                    entry = try cursor.next()
                }
            }
            // Lengths far past the value, a value cut short, and JSON that is not.
            try transaction.put(tables.rows, keys[0], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x01] as [UInt8])
            try transaction.put(tables.rows, keys[1], [0x05, 0x02] as [UInt8])
            try transaction.put(tables.rows, keys[2], [0x01, 0x02] + Array("x{".utf8))
            try transaction.put(db.store.seqs, withUnsafeBytes(of: UInt64(999).bigEndian) { Array($0) }, Array("ghost".utf8))
        }
        let report = try db.verify()
        print("verify found: \(report.problems)")
        #expect(report.documents == 21 && report.indexes == 1 && report.indexRows == 20)
        #expect(report.problems.filter { $0.hasPrefix("index app/by_n: a row's") }.count == 3, "\(report.problems)")
        #expect(report.problems.contains { $0.contains(#"sequence 999 names document "ghost", which does not exist"#) }, "\(report.problems)")
    }

    @Test("A database on read-only media, with and without its lock file: every read command answers, a write fails with a clear error",
          .enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root"))
    func readOnlyMedia() throws {
        let settee = try SetteeExecutable.find()
        let scratch = TemporaryDirectory()
        let medium = try #require(SmallFileSystem(megabytes: 8))
        let withLock = medium.url.appendingPathComponent("with-lock")
        let withoutLock = medium.url.appendingPathComponent("without-lock")
        for url in [withLock, withoutLock] {
            #expect(try settee.run(["put", #"{"_id": "a", "n": 1}"#, "--db", url.path], in: scratch.url).exitStatus == 0)
        }
        try FileManager.default.removeItem(at: withoutLock.appendingPathComponent("lock.mdb"))
        try? FileManager.default.removeItem(at: withLock.appendingPathComponent("settee-write.lock"))
        #expect(medium.makeReadOnly())
        for url in [withLock, withoutLock] {
            for arguments in [["get", "a"], ["info"], ["all-docs"], ["changes"], ["verify"]] {
                let outcome = try settee.run(arguments + ["--db", url.path], in: scratch.url)
                #expect(outcome.exitStatus == 0, "\(url.lastPathComponent) \(arguments[0]): \(outcome.standardError)")
            }
            let put = try settee.run(["put", #"{"_id": "b"}"#, "--db", url.path], in: scratch.url)
            #expect(put.exitStatus == 1)
            #expect(put.standardError.contains("read-only"), "\(url.lastPathComponent): \(put.standardError)")
        }
    }

    @Test("A settee import stopped with SIGSTOP inside its write transaction: other processes read at once, a write fails after the busy timeout, and succeeds once the import goes on")
    func stoppedImport() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        #expect(try settee.run(["put", #"{"_id": "first"}"#, "--db", url.path], in: directory.url).exitStatus == 0)
        let lines = (0..<30_000).map { #"{"_id": "doc\#($0)", "pad": "\#(String(repeating: "p", count: 500))"}"# }
        let input = directory.file("docs.ndjson", contents: lines.joined(separator: "\n"))

        // Whether some process holds the write lock file (tried from a description of our own).
        let lockPath = url.appendingPathComponent("settee-write.lock").path
        func writeLockIsHeld() -> Bool {
            let descriptor = open(lockPath, O_RDWR)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                flock(descriptor, LOCK_UN)
                return false
            }
            return true
        }

        // Stops the import while it holds the write lock (it may end first: then again).
        var stopped: ChildProcess?
        for _ in 0..<10 where stopped == nil {
            let importer = try settee.start(["import", input.path, "--db", url.path], in: directory.url)
            _ = eventually(20) { writeLockIsHeld() || hasEnded(importer) }
            kill(importer.pid, SIGSTOP)
            if writeLockIsHeld() {
                stopped = importer
            } else {
                kill(importer.pid, SIGCONT)
                _ = try importer.wait()
            }
        }
        let importer = try #require(stopped, "caught an import inside its write transaction")
        defer {
            importer.kill()
            _ = try? importer.wait()
        }

        for arguments in [["get", "first"], ["info"], ["changes", "--limit", "1"]] {
            let (outcome, killed) = try waitAtMost(20, for: try settee.start(arguments + ["--db", url.path], in: directory.url))
            #expect(!killed && outcome.exitStatus == 0, "\(arguments[0]) answers while the import is stopped: \(outcome.standardError)")
        }
        let started = Date()
        let (refused, killed) = try waitAtMost(20, for: try settee.start(["put", "--busy-timeout", "0.5", #"{"_id": "b"}"#, "--db", url.path], in: directory.url))
        #expect(!killed && refused.exitStatus == 1, "\(refused.standardError)")
        #expect(refused.standardError.contains("another process has held the write lock"), "\(refused.standardError)")
        #expect(Date().timeIntervalSince(started) < 10)

        kill(importer.pid, SIGCONT)
        let finished = try importer.wait()
        #expect(finished.exitStatus == 0, "\(finished.standardError)")
        let put = try settee.run(["put", #"{"_id": "b"}"#, "--db", url.path], in: directory.url)
        #expect(put.exitStatus == 0, "\(put.standardError)")
    }

    @Test("Database.Options.busyTimeout: while another holder has the write lock file, a write fails with busy after the timeout, reads answer, and the write goes through once it is released")
    func busyTimeoutOption() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        var options = Database.Options()
        options.busyTimeout = .milliseconds(300)
        let db = try Database(at: url, options: options)
        try db.put(#"{"_id": "a"}"#)
        // A description of its own: to flock, another process.
        let other = open(url.appendingPathComponent("settee-write.lock").path, O_RDWR)
        #expect(other >= 0)
        defer { close(other) }
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0)
        let started = ContinuousClock.now
        let error = try #require(throws: StorageError.self) { try db.put(#"{"_id": "b"}"#) }
        let waited = ContinuousClock.now - started
        #expect(error.errorCode == .busy)
        #expect(error.description.contains("another process has held the write lock for more than 0.3 s"), "\(error)")
        #expect(waited >= .milliseconds(300) && waited < .seconds(5), "\(waited)")
        #expect(try db.document("a") != nil)
        #expect(try db.document("b") == nil)
        flock(other, LOCK_UN)
        try db.put(#"{"_id": "b"}"#)
        #expect(try db.document("b") != nil)
    }

    @Test("Index rows and stored chunks whose bytes are garbage: queries say the index is damaged, none crashes", arguments: ["rows", "chunks"])
    func damagedIndexRecords(_ table: String) throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        var options = Database.Options()
        options.javaScriptWorkers = 1
        do {
            let db = try Database(at: url, options: options)
            for n in 0..<200 { try db.put(#"{"_id": "doc\#(n)", "n": \#(n)}"#) }
            try db.loadDesignDocuments(from: directory.file("app.json", contents: #"""
                {"_id": "_design/app", "views": {"by_n": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, 1); }", "reduce": "_count"}}}
                """#))
            _ = try db.query("app/by_n", options: ViewQueryOptions(parameters: []))
            let signature = try #require(try db.viewInfo().first?.signature)
            let tables = try db.indexes.tables(for: signature)
            try db.environment.write { transaction in
                let target = table == "rows" ? tables.rows : tables.chunks
                var keys: [[UInt8]] = []
                try transaction.withCursor(target) { cursor in
                    var entry = try cursor.first()
                    while let (key, _) = entry {
                        keys.append(Array(key))
                        entry = try cursor.next()
                    }
                }
                #expect(!keys.isEmpty)
                // Lengths far past the value's end.
                for key in keys { try transaction.put(target, key, [0x01, 0xFF, 0xFF, 0x7F] as [UInt8]) }
            }
        }
        for arguments in [["query", "app/by_n", "--reduce", "false", "--update", "false"], ["query", "app/by_n", "--update", "false"],
                          ["query", "app/by_n", "--startkey", "10", "--endkey", "150", "--update", "false"]] {
            let outcome = try settee.run(arguments + ["--db", url.path], in: directory.url)
            #expect(outcome.signal == nil, "\(arguments): signal \(outcome.signal ?? 0): \(outcome.standardError.prefix(300))")
            if outcome.exitStatus != 0 {
                #expect(outcome.standardError.contains("damaged"), "\(arguments): \(outcome.standardError)")
            }
        }
        let verify = try settee.run(["verify", "--db", url.path], in: directory.url)
        #expect(verify.exitStatus == 1 && verify.standardOutput.contains("app/by_n"), "\(verify.standardOutput)")
    }

    @Test("--db naming a file, or a read-only command on a path with no database: the error says so in words, and nothing is created")
    func badDatabasePaths() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let file = directory.file("plain.txt", contents: "hello")
        let put = try settee.run(["put", #"{"_id": "a"}"#, "--db", file.path], in: directory.url)
        #expect(put.exitStatus == 1)
        #expect(put.standardError.contains("is a file, not a database directory"), "\(put.standardError)")
        #expect(!put.standardError.contains("Unknown error"), "\(put.standardError)")

        let missing = directory.url.appendingPathComponent("missing")
        for arguments in [["get", "a"], ["info"], ["all-docs"], ["changes"], ["query", "d/v"]] {
            let outcome = try settee.run(arguments + ["--db", missing.path], in: directory.url)
            #expect(outcome.exitStatus == 1, "\(arguments[0])")
            #expect(outcome.standardError.contains("no Settee database at"), "\(arguments[0]): \(outcome.standardError)")
            #expect(!FileManager.default.fileExists(atPath: missing.path), "\(arguments[0]) created nothing")
        }
    }
}
