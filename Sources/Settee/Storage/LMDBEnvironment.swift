import CSetteeLMDB
import Foundation

/// One LMDB environment (a database directory), shared by everything in the
/// process that opens that directory: LMDB forbids opening it twice.
///
/// Reads run in their own short transactions and never block; writes are
/// serialised. The memory map grows when it fills: a write that hits the end
/// of the map is rolled back, the map doubles, and the write runs again, so
/// `MDB_MAP_FULL` never reaches callers while the disk has room.
final class LMDBEnvironment: @unchecked Sendable {
    let path: String
    private var handle: OpaquePointer?
    private let writeLock = NSLock()
    /// Held shared by every transaction, exclusively while the map is resized
    /// (LMDB allows resizing only when no transaction is active in the process).
    private let resizeLock: UnsafeMutablePointer<pthread_rwlock_t>
    private let databasesLock = NSLock()
    private var databases: [String: MDB_dbi] = [:]
    private let closings = TableHandleClosings()
    /// Read transactions reset after use, renewed by the next reads: beginning
    /// one afresh allocates and zeroes room for every possible table.
    private let idleReadersLock = NSLock()
    private var idleReaders: [OpaquePointer] = []
    private static let maximumIdleReaders = 16
    private(set) var mapSize: Int
    private let mapRangeLock = NSLock()
    private var mapRange: (size: Int, range: Range<Int>)?

    /// The largest the map may grow to; `nil` for no limit but the disk's.
    let maximumMapSize: Int?

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: WeakEnvironment] = [:]

    private struct WeakEnvironment {
        weak var environment: LMDBEnvironment?
    }

    /// Opens (creating if needed) the environment in `directory`, or returns
    /// the one this process already has open there. `readAhead`: whether a
    /// page fault on the map may read the file's neighbouring pages too (off:
    /// LMDB's `MDB_NORDAHEAD`, each fault reads its own page).
    static func open(directory: URL, initialMapSize: Int = 1 << 30, maximumMapSize: Int? = nil,
                     readAhead: Bool = true) throws(StorageError) -> LMDBEnvironment {
        let path = directory.standardizedFileURL.resolvingSymlinksInPath().path
        registryLock.lock()
        defer { registryLock.unlock() }
        if let existing = registry[path]?.environment { return existing }
        let environment = try LMDBEnvironment(path: path, initialMapSize: initialMapSize, maximumMapSize: maximumMapSize, readAhead: readAhead)
        registry[path] = WeakEnvironment(environment: environment)
        return environment
    }

    private init(path: String, initialMapSize: Int, maximumMapSize: Int?, readAhead: Bool) throws(StorageError) {
        self.path = path
        self.maximumMapSize = maximumMapSize
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw StorageError(code: Int32((error as NSError).code), operation: "creating the database directory \(path)")
        }
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "creating the storage environment")
        resizeLock = .allocate(capacity: 1)
        pthread_rwlock_init(resizeLock, nil)
        handle = env
        do {
            try check(mdb_env_set_maxdbs(env, 4096), "configuring \(path)")
            try check(mdb_env_set_maxreaders(env, 512), "configuring \(path)")
            // A map set earlier by another process (or a previous run) wins if larger.
            let size = min(initialMapSize, maximumMapSize ?? .max)
            try check(mdb_env_set_mapsize(env, size), "configuring \(path)")
            // NOTLS: read transactions are not tied to a thread, so async callers can use them.
            let flags = UInt32(MDB_NOTLS | (readAhead ? 0 : MDB_NORDAHEAD))
            try check(mdb_env_open(env, path, flags, 0o644), "opening the database at \(path)")
        } catch {
            mdb_env_close(env)
            handle = nil
            pthread_rwlock_destroy(resizeLock)
            resizeLock.deallocate()
            throw error
        }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        mapSize = info.me_mapsize
    }

    deinit {
        closeIdleReaders()
        if let handle { mdb_env_close(handle) }
        pthread_rwlock_destroy(resizeLock)
        resizeLock.deallocate()
    }

    var environment: OpaquePointer { handle! }

    // MARK: Transactions

    /// The id of the last committed write transaction, in any process: equal
    /// ids, nothing written between.
    var lastCommittedTransaction: Int {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        var info = MDB_envinfo()
        mdb_env_info(environment, &info)
        return info.me_last_txnid
    }

    /// Runs `body` in a read-only transaction (a consistent snapshot).
    func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
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
        return mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &txn)
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
    /// it back. `body` may run more than once (when the map has to grow), so it
    /// must do nothing outside the transaction that cannot be repeated.
    ///
    /// A commit that need not be durable (what can be recomputed, such as view
    /// indexes) skips the second of LMDB's two flushes: a system crash may undo
    /// it, but never corrupts the database (LMDB's `MDB_NOMETASYNC`).
    func write<T>(durable: Bool = true, _ body: (LMDBTransaction) throws -> T) throws -> T {
        writeLock.lock()
        defer { writeLock.unlock() }
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
            } catch let error as StorageError where error.code == MDB_MAP_RESIZED {
                adoptMapSize()
            }
        }
    }

    private func writeOnce<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        // No write transaction is open in this process: LMDB lets handles close now.
        for dbi in closings.closable() { mdb_dbi_close(environment, dbi) }
        var txn: OpaquePointer?
        try check(mdb_txn_begin(environment, nil, 0, &txn), "beginning a write transaction on \(path)")
        let result: T
        do {
            result = try body(LMDBTransaction(txn: txn!, environment: self))
        } catch {
            mdb_txn_abort(txn)
            closings.rolledBack()
            throw error
        }
        var code = mdb_txn_commit(txn)
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
    func releaseMappedPages() {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard let range = mappedRange() else { return }
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
    static func readWholeFile(_ path: String) -> String? {
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
    func database(_ name: String, in transaction: LMDBTransaction) throws(StorageError) -> MDB_dbi {
        if let dbi = databasesLock.withLock({ databases[name] }) { return dbi }
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(transaction.txn, name, UInt32(MDB_CREATE), &dbi), "opening the table \(name) in \(path)")
        return dbi
    }

    /// Opens named databases in their own committed transaction, so that
    /// handles are valid for every later transaction (LMDB's rule). Handles are
    /// shared only once that transaction has committed: a reader given one
    /// earlier would fail with EINVAL.
    func openDatabases(_ names: [String]) throws -> [MDB_dbi] {
        let known: [MDB_dbi]? = databasesLock.withLock {
            let handles = names.compactMap { databases[$0] }
            return handles.count == names.count ? handles : nil
        }
        if let known { return known }
        let handles = try write { transaction in
            // Under the write lock: no other write can close a handle found open here before it is kept.
            closings.reopened(names)
            return try names.map { try database($0, in: transaction) }
        }
        databasesLock.withLock {
            for (name, dbi) in zip(names, handles) { databases[name] = dbi }
        }
        return handles
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
    func emptyDatabase(_ name: String, in transaction: LMDBTransaction) throws(StorageError) {
        let dbi = try database(name, in: transaction)
        try check(mdb_drop(transaction.txn, dbi, 0), "emptying the table \(name) in \(path)")
        closings.emptied(name, dbi: dbi)
        databasesLock.withLock { databases[name] = nil }
    }

    /// Bytes the data file takes on disk.
    var fileSize: Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")
        return (attributes?[.size] as? Int) ?? 0
    }
}
