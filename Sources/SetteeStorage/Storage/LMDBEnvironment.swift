import CSetteeLMDB
import CSetteeLMDBGuard
package import Foundation
import SetteeCore
#if canImport(CDispatch)
import CDispatch  // Linux: where Foundation's C types (`stat`, …) are declared
#endif

/// One LMDB environment (a database directory), shared by everything in the
/// process that opens that directory: LMDB forbids opening it twice.
///
/// Reads run in their own short transactions and never block; writes are
/// serialised. The memory map grows when it fills: a write that hits the end
/// of the map is rolled back, the map doubles, and the write runs again, so
/// `MDB_MAP_FULL` never reaches callers while the disk has room.
package final class LMDBEnvironment: @unchecked Sendable {
    package let path: String
    private var handle: OpaquePointer?
    /// This process's writers take turns here, and wait here while another
    /// process holds the write lock file.
    private let writerTurn = NSLock()
    /// Held while this process has a write transaction open, and while it
    /// opens table handles in a read transaction (LMDB forbids opening handles
    /// in two transactions at once). Opening tables waits for a write of this
    /// process that runs, never for one that waits for another process.
    private let writeLock = NSLock()
    /// Held shared by every transaction, exclusively while the map is resized
    /// (LMDB allows resizing only when no transaction is active in the process).
    private let resizeLock: UnsafeMutablePointer<pthread_rwlock_t>
    private let databasesLock = NSLock()
    private var databases: [String: LMDBTable] = [:]
    private let closings = TableHandleClosings()
    /// Read transactions reset after use, renewed by the next reads: beginning
    /// one afresh allocates and zeroes room for every possible table.
    private let idleReadersLock = NSLock()
    private var idleReaders: [OpaquePointer] = []
    private static let maximumIdleReaders = 16
    package private(set) var mapSize: Int
    private let mapRangeLock = NSLock()
    private var mapRange: (size: Int, range: Range<Int>)?

    /// The largest the map may grow to; `nil` for no limit but the disk's.
    package let maximumMapSize: Int?

    /// How many opens hold the environment (guarded by `registryLock`): the
    /// last ``release()`` closes it.
    private var holders = 0

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: WeakEnvironment] = [:]

    private struct WeakEnvironment {
        weak var environment: LMDBEnvironment?
    }

    /// How an environment is opened.
    package struct Settings {
        package var initialMapSize = 64 << 30
        /// The largest the map may grow to; `nil` for no limit but the disk's.
        package var maximumMapSize: Int?
        /// Whether a page fault on the map may read the file's neighbouring
        /// pages too (off: LMDB's `MDB_NORDAHEAD`, each fault reads its own page).
        package var readAhead = true
        /// Open read-only even when the files may be written.
        package var readOnly = false
        /// Create the directory and the files when there is no database yet;
        /// otherwise a missing database is an error.
        package var createIfMissing = true
        /// How long a write waits for another process's write to end.
        package var busyTimeout: Duration = .seconds(5)

        package init(initialMapSize: Int = 64 << 30, maximumMapSize: Int? = nil, readAhead: Bool = true,
                     readOnly: Bool = false, createIfMissing: Bool = true, busyTimeout: Duration = .seconds(5)) {
            self.initialMapSize = initialMapSize
            self.maximumMapSize = maximumMapSize
            self.readAhead = readAhead
            self.readOnly = readOnly
            self.createIfMissing = createIfMissing
            self.busyTimeout = busyTimeout
        }
    }

    /// Opens (creating if needed) the environment in `directory`, or returns
    /// the one this process already has open there.
    package static func open(directory: URL, settings: Settings = Settings()) throws(StorageError) -> LMDBEnvironment {
        let path = directory.standardizedFileURL.resolvingSymlinksInPath().path
        registryLock.lock()
        defer { registryLock.unlock() }
        if let existing = registry[path]?.environment {
            // One environment per directory and process (LMDB's rule), so one mode too.
            if settings.readOnly && !existing.isReadOnly {
                throw StorageError(code: EINVAL, operation: "opening the database at \(path) read-only",
                                   explanation: "this process already has it open for writing; share that Database instead")
            }
            // A file cut short since the first open is refused here too, not found by a read's SIGBUS.
            if let handle = existing.handle {
                try checkFileLength(handle, dataFile: path + "/data.mdb", path: path)
            }
            existing.holders += 1
            return existing
        }
        let environment = try LMDBEnvironment(path: path, settings: settings)
        environment.holders = 1
        registry[path] = WeakEnvironment(environment: environment)
        return environment
    }

    /// Whether the database was opened read-only (asked for, or its files may
    /// not be written by this process): every write fails.
    package let isReadOnly: Bool
    /// How long a write waits for another process's write to end.
    package let busyTimeout: Duration
    /// The lock file every Settee process takes before LMDB's write lock,
    /// which cannot time out (`-1` when read-only).
    private let writeLockFile: Int32
    /// When this process last cleared the reader slots of dead processes (guarded by `writerTurn`).
    private var lastStaleReaderCheck = ContinuousClock.now
    /// How often a long-lived process clears dead readers' slots, at most (before a write).
    package static let staleReaderCheckInterval: Duration = .seconds(1)

    private init(path: String, settings: Settings) throws(StorageError) {
        self.path = path
        self.maximumMapSize = settings.maximumMapSize
        self.busyTimeout = settings.busyTimeout
        let dataFile = path + "/data.mdb"
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if exists && !isDirectory.boolValue {
            throw StorageError(code: ENOTDIR, operation: "opening the database at \(path)",
                               explanation: "\(path) is a file, not a database directory")
        }
        if !FileManager.default.fileExists(atPath: dataFile) {
            guard settings.createIfMissing && !settings.readOnly else {
                throw StorageError(code: ENOENT, operation: "opening the database at \(path)",
                                   explanation: "there is no Settee database at \(path)")
            }
            try Self.makeDirectory(path)
        }
        // Files this process may not write (read-only media, another user's) are opened read-only.
        let readOnly = settings.readOnly || access(path, W_OK) != 0
            || (FileManager.default.fileExists(atPath: dataFile) && access(dataFile, W_OK) != 0)
        isReadOnly = readOnly
        if readOnly {
            writeLockFile = -1
        } else {
            writeLockFile = Glibc.open(path + "/settee-write.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            if writeLockFile < 0 {
                throw StorageError(code: errno, operation: "opening the write lock file in \(path)")
            }
        }
        var env: OpaquePointer?
        resizeLock = .allocate(capacity: 1)
        pthread_rwlock_init(resizeLock, nil)
        do {
            try check(mdb_env_create(&env), "creating the storage environment")
            handle = env
            // A page LMDB cannot make sense of (a damaged file) answers
            // MDB_CORRUPTED through the guard instead of aborting the process.
            settee_lmdb_guard_environment(env)
            try check(mdb_env_set_maxdbs(env, 4096), "configuring \(path)")
            try check(mdb_env_set_maxreaders(env, 512), "configuring \(path)")
            // A map set earlier by another process (or a previous run) wins if larger.
            let size = min(settings.initialMapSize, settings.maximumMapSize ?? .max)
            try check(mdb_env_set_mapsize(env, size), "configuring \(path)")
            // NOTLS: read transactions are not tied to a thread, so async callers can use them.
            var flags = MDB_NOTLS | (settings.readAhead ? 0 : MDB_NORDAHEAD)
            if readOnly {
                flags |= MDB_RDONLY
                // Without a lock file that can be written, readers cannot register in it: read without locks.
                let lockFile = path + "/lock.mdb"
                if access(lockFile, W_OK) != 0 && (FileManager.default.fileExists(atPath: lockFile) || access(path, W_OK) != 0) {
                    flags |= MDB_NOLOCK
                }
            }
            try check(settee_mdb_env_open(env, path, UInt32(flags), 0o644), "opening the database at \(path)")
            try Self.checkFileLength(env!, dataFile: dataFile, path: path)
            // Reader slots of processes that died inside a read transaction pin
            // the pages of their snapshot for every writer, and fill the table.
            Self.clearDeadReaders(env!)
        } catch {
            if let env { mdb_env_close(env) }
            handle = nil
            pthread_rwlock_destroy(resizeLock)
            resizeLock.deallocate()
            if writeLockFile >= 0 { close(writeLockFile) }
            throw error
        }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        mapSize = info.me_mapsize
    }

    /// Creates `path` and its missing parents, with the system's words for what fails.
    private static func makeDirectory(_ path: String) throws(StorageError) {
        if mkdir(path, 0o755) == 0 { return }
        let error = errno
        if error == EEXIST {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return }
            throw StorageError(code: ENOTDIR, operation: "creating the database directory \(path)",
                               explanation: "\(path) is a file, not a database directory")
        }
        let parent = (path as NSString).deletingLastPathComponent
        if error == ENOENT && parent != path && !parent.isEmpty {
            try makeDirectory(parent)
            if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
        }
        throw StorageError(code: errno == 0 ? error : errno, operation: "creating the database directory \(path)")
    }

    /// Refuses a data file shorter than the pages its last commit uses: LMDB
    /// maps the file and would die with SIGBUS on the first missing page
    /// (a read, or a write that reuses a freed page there).
    private static func checkFileLength(_ env: OpaquePointer, dataFile: String, path: String) throws(StorageError) {
        var info = MDB_envinfo()
        var stats = MDB_stat()
        try check(mdb_env_info(env, &info), "reading the state of \(path)")
        try check(mdb_env_stat(env, &stats), "reading the state of \(path)")
        var file = stat()
        guard stat(dataFile, &file) == 0 else { return }
        let needed = (info.me_last_pgno + 1) * Int(stats.ms_psize)
        if Int(file.st_size) < needed {
            throw StorageError(code: MDB_CORRUPTED, operation: "opening the database at \(path)",
                               explanation: "the database is damaged: data.mdb is truncated, \(file.st_size) bytes long where its last page ends at byte \(needed)")
        }
    }

    deinit {
        closeIdleReaders()
        if let handle { mdb_env_close(handle) }
        if writeLockFile >= 0 { close(writeLockFile) }
        pthread_rwlock_destroy(resizeLock)
        resizeLock.deallocate()
    }

    package var environment: OpaquePointer { handle! }

    /// Gives up the hold of one ``open(directory:settings:)``. The last
    /// closes the environment once the transactions under way have ended
    /// (a later one fails with ``SetteeErrorCode/closed``); opening the
    /// directory again then opens it anew. It must not be called inside a
    /// transaction of this environment, which it would wait for forever.
    /// Whether this was the last hold, which closed the environment.
    @discardableResult
    package func release() -> Bool {
        let last = Self.registryLock.withLock {
            holders -= 1
            guard holders == 0 else { return false }
            if Self.registry[path]?.environment === self { Self.registry[path] = nil }
            return true
        }
        guard last else { return false }
        writerTurn.lock()
        defer { writerTurn.unlock() }
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        closeIdleReaders()
        if let handle { mdb_env_close(handle) }
        handle = nil
        return true
    }

    /// Fails once ``release()`` closed the environment (with `resizeLock` or `writerTurn` held).
    private func checkOpen() throws(StorageError) {
        if handle == nil { throw Self.closedError(path) }
    }

    /// The error of a call on a closed database.
    package static func closedError(_ path: String) -> StorageError {
        StorageError(code: EBADF, operation: "using the database at \(path)", explanation: "the database is closed")
    }

    // MARK: Transactions

    /// The id of the last committed write transaction, in any process: equal
    /// ids, nothing written between.
    package var lastCommittedTransaction: Int {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard let handle else { return 0 }
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_last_txnid
    }

    private let ownCommitLock = NSLock()
    private var ownCommit = 0

    /// The id of this process's last committed write transaction (0 before
    /// the first): a ``CommitWatch`` skips the commits it signals itself.
    package var lastOwnCommit: Int {
        ownCommitLock.withLock { ownCommit }
    }

    /// Runs `body` in a read-only transaction (a consistent snapshot).
    package func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        try checkOpen()
        // Counted before the snapshot is taken: no handle this snapshot may use is closed under it.
        let epoch = closings.readerBegins()
        defer { closings.readerEnded(epoch) }
        var txn: OpaquePointer?
        var code = beginRead(&txn)
        if code == MDB_MAP_RESIZED {
            // Another process grew the map: adopt its size, then begin again.
            pthread_rwlock_unlock(resizeLock)
            adoptMapSize()
            pthread_rwlock_rdlock(resizeLock)
            try checkOpen()
            code = beginRead(&txn)
        }
        try check(code, "beginning a read transaction on \(path)")
        defer { endRead(txn!) }
        return try body(LMDBTransaction(txn: txn!, environment: self))
    }

    private func beginRead(_ txn: inout OpaquePointer?) -> Int32 {
        if let idle = idleReadersLock.withLock({ idleReaders.popLast() }) {
            let code = mdb_txn_renew(idle)
            if code == 0 {
                txn = idle
                return 0
            }
            mdb_txn_abort(idle)
        }
        let code = settee_mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &txn)
        guard code == MDB_READERS_FULL else { return code }
        // The slots may be held by dead processes: free theirs, then try again.
        return Self.clearDeadReaders(environment) > 0 ? settee_mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &txn) : code
    }

    private func endRead(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        let kept = idleReadersLock.withLock {
            guard idleReaders.count < Self.maximumIdleReaders else { return false }
            idleReaders.append(txn)
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    /// Frees the reset read transactions (before the map is resized, and at close).
    private func closeIdleReaders() {
        let idle = idleReadersLock.withLock {
            defer { idleReaders.removeAll() }
            return idleReaders
        }
        for txn in idle { mdb_txn_abort(txn) }
    }

    /// Runs `body` in the write transaction and commits it; a thrown error rolls
    /// it back. When the map fills, it grows and `body` runs again, so it must
    /// do nothing outside the transaction that cannot be repeated; with
    /// `runsBodyOnce` (a caller's closure, which may not expect to run twice)
    /// the map grows, and the write fails with `EAGAIN`
    /// (``SetteeErrorCode/databaseGrew``) for its caller to run again.
    ///
    /// A commit that need not be durable (what can be recomputed, such as view
    /// indexes) skips the second of LMDB's two flushes: a system crash may undo
    /// it, but never corrupts the database (LMDB's `MDB_NOMETASYNC`).
    ///
    /// A write first takes the database's lock file, which every Settee
    /// process takes before LMDB's own write lock: while another process holds
    /// it (a writer that is slow, stopped or hung) this waits up to
    /// ``busyTimeout``, then fails with `EBUSY` (``SetteeErrorCode/busy``).
    /// LMDB's lock would wait for ever.
    package func write<T>(durable: Bool = true, runsBodyOnce: Bool = false, _ body: (LMDBTransaction) throws -> T) throws -> T {
        if isReadOnly {
            throw StorageError(code: EROFS, operation: "writing to \(path)",
                               explanation: "the database is open read-only (asked for, or its files may not be written by this process)")
        }
        writerTurn.lock()
        defer { writerTurn.unlock() }
        try checkOpen()
        try lockAgainstOtherProcesses()
        defer { flock(writeLockFile, LOCK_UN) }
        writeLock.lock()
        defer { writeLock.unlock() }
        clearStaleReadersNow()
        if !durable {
            // Only this process's commits see the flag, and the write lock keeps them out until it is cleared.
            mdb_env_set_flags(environment, UInt32(MDB_NOMETASYNC), 1)
        }
        defer { if !durable { mdb_env_set_flags(environment, UInt32(MDB_NOMETASYNC), 0) } }
        while true {
            do {
                return try writeOnce(body)
            } catch let error as StorageError where error.code == MDB_MAP_FULL {
                try grow()
                if runsBodyOnce {
                    throw StorageError(code: EAGAIN, operation: "writing to \(path)",
                                       explanation: "the batch filled the database's memory map, which has grown to \(mapSize) bytes; nothing was written, and the batch did not run again: run it again")
                }
            } catch let error as StorageError where error.code == MDB_MAP_RESIZED {
                adoptMapSize()
            }
        }
    }

    /// Takes the lock file (with `writerTurn` held), polling until ``busyTimeout``:
    /// `flock` cannot wait with a timeout, and a lock held by a process that
    /// died is released by the kernel.
    private func lockAgainstOtherProcesses() throws(StorageError) {
        let clock = ContinuousClock()
        let deadline = clock.now + busyTimeout
        var pause: Duration = .milliseconds(1)
        while flock(writeLockFile, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            guard error == EWOULDBLOCK else {
                throw StorageError(code: error, operation: "taking the write lock file of \(path)")
            }
            guard clock.now < deadline else {
                throw StorageError(code: EBUSY, operation: "writing to \(path)",
                                   explanation: "another process has held the write lock for more than \(Self.seconds(busyTimeout)) s (a writer that is slow, stopped or hung); nothing was written")
            }
            usleep(UInt32(pause / .microseconds(1)))
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// A duration as seconds, e.g. `5` or `0.25`.
    private static func seconds(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return String(format: "%g", seconds)
    }

    /// Frees the reader slots of processes that died inside a read
    /// transaction (LMDB's `mdb_reader_check`), at most once per
    /// ``staleReaderCheckInterval``; with `writerTurn` held. A dead reader's
    /// snapshot keeps every page it could see from reuse, so the file grows
    /// without bound, and its slot is lost until someone clears it.
    private func clearStaleReadersNow() {
        let now = ContinuousClock.now
        guard now - lastStaleReaderCheck >= Self.staleReaderCheckInterval else { return }
        lastStaleReaderCheck = now
        Self.clearDeadReaders(environment)
    }

    /// Frees the reader slots of dead processes (`mdb_reader_check`); how many.
    @discardableResult
    private static func clearDeadReaders(_ environment: OpaquePointer) -> Int32 {
        var dead: Int32 = 0
        mdb_reader_check(environment, &dead)
        return dead
    }

    private func writeOnce<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        // No write transaction is open in this process: LMDB lets handles close now.
        for dbi in closings.closable() { mdb_dbi_close(environment, dbi) }
        var txn: OpaquePointer?
        try check(settee_mdb_txn_begin(environment, nil, 0, &txn), "beginning a write transaction on \(path)")
        let result: T
        do {
            result = try body(LMDBTransaction(txn: txn!, environment: self))
        } catch {
            mdb_txn_abort(txn)
            closings.rolledBack()
            throw error
        }
        let id = mdb_txn_id(txn)
        var code = settee_mdb_txn_commit(txn)
        if code == 0 { ownCommitLock.withLock { ownCommit = id } }
        if code != 0 { closings.rolledBack() }
        if code == MDB_MAP_FULL { throw StorageError(code: code, operation: "committing to \(path)") }
        // LMDB reports a write that a full disk cut short as EIO.
        if code == EIO && diskIsFull { code = ENOSPC }
        try check(code, "committing to \(path)")
        closings.committed()
        return result
    }

    /// Whether the file system holding the database has (almost) no room left.
    private var diskIsFull: Bool {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return false }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize) < 1 << 20
    }

    private func grow() throws(StorageError) {
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        let limit = maximumMapSize ?? .max
        guard mapSize < limit else {
            throw StorageError(code: MDB_MAP_FULL, operation: "writing to \(path): the database reached its size limit of \(limit) bytes")
        }
        let newSize = mapSize > limit / 2 ? limit : mapSize * 2
        closeIdleReaders()
        try check(mdb_env_set_mapsize(environment, newSize), "growing the database at \(path) to \(newSize) bytes")
        mapSize = newSize
    }

    private func adoptMapSize() {
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard handle != nil else { return }
        closeIdleReaders()
        mdb_env_set_mapsize(environment, 0)
        var info = MDB_envinfo()
        mdb_env_info(environment, &info)
        mapSize = info.me_mapsize
    }

    /// Lets the kernel take back the pages of the memory map this process has
    /// touched: they stay in the page cache and come back on the next read,
    /// but stop counting as this process's memory. Index builds, which read
    /// every document and write whole indexes, call it as they go so that
    /// their resident memory stays bounded. The map is read-only (writes go
    /// through the file), so nothing is lost; it is found in `/proc/self/maps`
    /// (Linux), and where that cannot be read this does nothing.
    package func releaseMappedPages() {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard handle != nil, let range = mappedRange() else { return }
        madvise(UnsafeMutableRawPointer(bitPattern: range.lowerBound), range.count, MADV_DONTNEED)
    }

    /// Where the data file is mapped (found once per map size).
    private func mappedRange() -> Range<Int>? {
        mapRangeLock.withLock {
            if let (size, range) = mapRange, size == mapSize { return range }
            guard let maps = Self.readWholeFile("/proc/self/maps") else { return nil }
            let file = path + "/data.mdb"
            for line in maps.split(separator: "\n") where line.hasSuffix(file) {
                let bounds = line.prefix { $0 != " " }.split(separator: "-").compactMap { Int($0, radix: 16) }
                guard bounds.count == 2, bounds[1] - bounds[0] == mapSize else { continue }
                mapRange = (mapSize, bounds[0]..<bounds[1])
                return bounds[0]..<bounds[1]
            }
            return nil
        }
    }

    /// A file read to its end (procfs files claim a size of zero).
    package static func readWholeFile(_ path: String) -> String? {
        let descriptor = Glibc.open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Named databases

    /// The handle of the named database in `transaction`, created on first use.
    /// Not shared with other threads: see ``openDatabases(_:)``.
    package func database(_ name: String, in transaction: LMDBTransaction) throws(StorageError) -> LMDBTable {
        if let table = databasesLock.withLock({ databases[name] }) { return table }
        var dbi = MDB_dbi()
        try check(settee_mdb_dbi_open(transaction.txn, name, UInt32(MDB_CREATE), &dbi), "opening the table \(name) in \(path)")
        return LMDBTable(dbi: dbi)
    }

    /// Opens named databases in their own committed transaction, so that
    /// handles are valid for every later transaction (LMDB's rule). Handles are
    /// shared only once that transaction has committed: a reader given one
    /// earlier would fail with EINVAL.
    package func openDatabases(_ names: [String]) throws -> [LMDBTable] {
        let known: [LMDBTable]? = databasesLock.withLock {
            let handles = names.compactMap { databases[$0] }
            return handles.count == names.count ? handles : nil
        }
        if let known { return known }
        let handles = try openExistingDatabases(names) ?? write { transaction in
            // Under the write lock: no other write can close a handle found open here before it is kept.
            closings.reopened(names)
            return try names.map { try database($0, in: transaction) }
        }
        databasesLock.withLock {
            for (name, dbi) in zip(names, handles) { databases[name] = dbi }
        }
        return handles
    }

    /// Opens named databases that all exist already in a read transaction,
    /// which LMDB allows and which, committed, shares their handles as a write
    /// would: opening a database never waits for another process's write.
    /// Nil when one of them is missing (a write must create it).
    private func openExistingDatabases(_ names: [String]) throws -> [LMDBTable]? {
        // No write transaction of this process is open meanwhile: LMDB forbids
        // opening handles in two transactions at once.
        writeLock.lock()
        defer { writeLock.unlock() }
        closings.reopened(names)
        pthread_rwlock_rdlock(resizeLock)
        if handle == nil {
            pthread_rwlock_unlock(resizeLock)
            throw Self.closedError(path)
        }
        var txn: OpaquePointer?
        var code = settee_mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &txn)
        if code == MDB_MAP_RESIZED {
            pthread_rwlock_unlock(resizeLock)
            adoptMapSize()
            pthread_rwlock_rdlock(resizeLock)
            code = settee_mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &txn)
        }
        defer { pthread_rwlock_unlock(resizeLock) }
        try check(code, "beginning a read transaction on \(path)")
        var handles: [LMDBTable] = []
        for name in names {
            var dbi = MDB_dbi()
            let code = settee_mdb_dbi_open(txn, name, 0, &dbi)
            if code == MDB_NOTFOUND && !isReadOnly {
                mdb_txn_abort(txn)
                return nil
            }
            if code != 0 {
                mdb_txn_abort(txn)
                if code == MDB_NOTFOUND {
                    throw StorageError(code: EROFS, operation: "opening the table \(name) in \(path)",
                                       explanation: "the table does not exist, and the database is open read-only")
                }
                throw StorageError(code: code, operation: "opening the table \(name) in \(path)")
            }
            handles.append(LMDBTable(dbi: dbi))
        }
        try check(settee_mdb_txn_commit(txn), "opening tables in \(path)")
        return handles
    }

    /// The names in LMDB's main table: the named tables, and whatever else
    /// another program may have put there.
    package func tableNames() throws -> [String] {
        try read { transaction in
            // LMDB's main table is handle 1 (`MAIN_DBI`), always open.
            try transaction.withCursor(LMDBTable(dbi: 1)) { cursor in
                var names: [String] = []
                var entry = try cursor.first()
                while let (key, _) = entry {
                    names.append(String(decoding: key, as: UTF8.self))
                    entry = try cursor.next()
                }
                return names
            }
        }
    }

    /// Empties a named database, freeing its pages; its name stays, and its
    /// handle closes once no transaction of this process can be using it
    /// (``TableHandleClosings``).
    ///
    /// Removing the name as well (`mdb_drop` with `del = 1`) is unsafe in two
    /// ways. In this process it closes the handle at once, in every
    /// transaction: a reader whose snapshot still holds the rows would find
    /// the table gone. In another process that keeps the handle open, LMDB
    /// does not notice the name is gone, and a later write through the handle
    /// (an index built again when its view comes back) corrupts memory. An
    /// emptied table is a name and an empty record in LMDB's main table,
    /// and is used again if its index comes back.
    package func emptyDatabase(_ name: String, in transaction: LMDBTransaction) throws(StorageError) {
        let table = try database(name, in: transaction)
        try check(settee_mdb_drop(transaction.txn, table.dbi, 0), "emptying the table \(name) in \(path)")
        closings.emptied(name, dbi: table.dbi)
        databasesLock.withLock { databases[name] = nil }
    }

    /// Bytes the data file takes on disk.
    package var fileSize: Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")
        return (attributes?[.size] as? Int) ?? 0
    }
}
