public import Foundation
import Synchronization
public import Logging
public import SetteeCore
public import SetteeStorage
public import SetteeJavaScript
import SetteeViews
import SetteeFind

/// A Settee database: a directory holding documents (and, with views, their
/// indexes) in LMDB.
///
/// Open it once and share it: every method is safe to call from any thread.
/// Reads never block; writes are serialised. Opening the same directory again
/// in the same process shares the same storage.
///
/// ```swift
/// let db = try Database(at: URL(filePath: "/tmp/books"))
/// let result = try db.put(#"{"_id": "b1", "title": "Dune"}"#)
/// let book = try db.document("b1")
/// ```
public final class Database: Sendable {
    /// Settings for opening a database.
    public struct Options: Sendable {
        /// The memory map's size to start with: 64 GiB, or ``maximumSize``
        /// when that is smaller.
        ///
        /// The map is address space, not memory or disk: the data file grows
        /// only as pages are written, and only pages read take memory. When a
        /// write fills the map, the map doubles (up to ``maximumSize``): a
        /// write of Settee's own (a `put`, an import, an index update) then
        /// runs again, while a ``Database/write(_:)-3j48g`` batch, whose closure
        /// runs only once, is rolled back with
        /// ``SetteeErrorCode/databaseGrew`` for the caller to run again. A
        /// map as large as the database will ever be avoids both; a smaller
        /// one suits only a process that maps many databases at once.
        public var initialMapSize: Int = 64 << 30
        /// A bound on the database's size; `nil` for none but the disk's.
        public var maximumSize: Int?
        /// Whether reading a page of the database file that is not in memory
        /// also reads its neighbours (the kernel's read-ahead). On by
        /// default: an index build reads documents in the order they were
        /// written, and the first queries after a restart read neighbouring
        /// pages of the index; both go several times faster from a cold
        /// cache with it. Turn it off for a database much larger than memory
        /// that is read at random, where neighbouring pages would only take
        /// the place of pages still in use.
        public var readAhead = true
        /// Limits for the JavaScript that views run.
        public var javaScript = JavaScriptConfiguration()
        /// JavaScript workers (threads, each with its own engine context) for indexing.
        public var javaScriptWorkers = ProcessInfo.processInfo.activeProcessorCount
        /// Documents an index update maps at a time.
        public var indexBatchSize = 8192
        /// The memory a large index update holds mapped rows in before it
        /// writes them, in key order, in one transaction; near the update's end,
        /// up to half as much again, so that the last write takes the rest.
        /// While every write of the update finds its rows in order (appended,
        /// or in a few long runs), an eighth of it: gathering such rows saves
        /// nothing, and the last write, which nothing overlaps, stays short.
        /// A new index whose rows would take more than two such writes writes
        /// each buffer to a sorted run on disk instead, and the runs are merged
        /// into it once at the end (see <doc:PerformanceAndLimits>).
        public var indexBufferBytes = 24 << 20
        /// A new index whose rows would take more than this many writes of
        /// ``indexBufferBytes`` is built from sorted runs on disk, merged
        /// into it once (the rows then go in once, however many there are).
        package var indexSpillFlushes = 2
        /// Who writes, as design documents' `validate_doc_update` functions
        /// see it (their `userCtx`): an administrator unless said otherwise.
        public var userContext = UserContext.administrator
        /// The largest document written, in bytes of its JSON as given (to
        /// ``Database/put(_:)-7va9h``, a ``WriteBatch``, an import line or array
        /// element, or as a `Codable` value encodes it). Larger ones are
        /// refused with ``SetteeErrorCode/documentTooLarge``. CouchDB's
        /// `max_document_size` and its default (8000000 bytes): a document is
        /// read, copied and handed to every view whole, so one huge document
        /// costs several times its size in memory wherever it goes.
        public var maximumDocumentBytes = 8_000_000
        /// The largest design document (`_design/…`) written or loaded from a
        /// file, in bytes of its JSON. Lower than ``maximumDocumentBytes``
        /// because a design document is parsed, hashed and has every function
        /// compiled by each process that queries it, before its first query
        /// answers: at 2 MB that stays within tens of milliseconds, where a
        /// 50 MB one makes every query take a second and more than half a
        /// gigabyte. Views with bundled CommonJS libraries take a few hundred
        /// kilobytes.
        public var maximumDesignDocumentBytes = 2_000_000
        /// How long a write waits while another process writes to the
        /// database, before it fails with ``SetteeErrorCode/busy``. Writes of
        /// other processes are usually short; a writer that is stopped or
        /// hung would otherwise block every write for ever. Reads never wait.
        public var busyTimeout: Duration = .seconds(5)
        /// Open the database read-only: reads work, every write fails with
        /// ``SetteeErrorCode/readOnly``. A database whose files this process
        /// may not write (read-only media, another user's files) is opened
        /// read-only without it.
        public var readOnly = false
        /// Whether opening a directory with no database creates one (the
        /// default); otherwise it fails with ``SetteeErrorCode/notFound``.
        public var createIfMissing = true
        /// How `Codable` values are encoded as documents and documents
        /// decoded as values (ISO 8601 dates with fractional seconds unless
        /// changed); each typed call may give its own.
        public var coding = DocumentCoding.standard
        /// The largest `limit` a partition query of a view or of `_all_docs`
        /// may ask for, and the limit of one that asks for none (CouchDB's
        /// `[query_server_config] partition_query_limit`); nil, as CouchDB
        /// 3.5 has it by default, for none. A larger `limit` is refused with
        /// `query_parse_error` "Limit is too large, must not exceed N". `find`
        /// is not limited by it.
        public var partitionQueryLimit: Int?
        /// A rule in Swift that every document write passes, whatever path
        /// it takes (see ``DocumentWriteRule``); nil for none.
        public var writeRule: (any DocumentWriteRule)?
        /// Whether an edit keeps the body of the revision it replaces (and
        /// that revision's attachments) until ``Database/compact()-6hje7``, as
        /// CouchDB keeps them until compaction: ``Database/document(_:revision:)-927p7``
        /// then reads earlier revisions too. Off by default, as in Couchbase
        /// Lite (an edit then writes only the new revision); `settee serve`
        /// turns it on.
        public var keepsEarlierRevisions = false

        public init() {}

        /// The size limits documents are checked against.
        var sizeLimits: DocumentSizeLimits {
            DocumentSizeLimits(document: maximumDocumentBytes, designDocument: maximumDesignDocumentBytes)
        }
    }

    /// The database directory.
    public let url: URL
    /// The storage, until ``close()``.
    private let storage: OpenStorage
    /// The LMDB environment; once closed, ``SetteeErrorCode/closed``.
    var environment: LMDBEnvironment {
        get throws(StorageError) { try storage.get(url).environment }
    }
    /// The documents; once closed, ``SetteeErrorCode/closed``.
    var store: DocumentStore {
        get throws(StorageError) { try storage.get(url).store }
    }
    /// The documents, also once closed: for what cannot throw (listeners,
    /// which then read nothing more once the storage is closed).
    let storeEvenIfClosed: DocumentStore
    /// The view indexes; once closed, ``SetteeErrorCode/closed``.
    var indexes: ViewIndexStore {
        get throws(StorageError) { try storage.get(url).indexes }
    }
    let designDocumentCache: DesignDocumentCache
    /// The indexes `find` can use, read once per change of the design documents.
    let findIndexes = FindIndexCache()
    /// `find` requests as prepared for those indexes, by request.
    let findPlans = FindPlanCache()
    /// The view indexes last found up to date, to skip reading their states while nothing is committed.
    let freshIndexes = FreshIndexes()
    /// Whether the database is partitioned, as read after the last commit (views and `find` ask on every query).
    let partitionedProperty = Mutex<(transaction: Int, partitioned: Bool)?>(nil)
    let logger: Logger
    /// The views written in Swift registered on this instance (``register(_:)``).
    let swiftViews = SwiftViewRegistry()
    /// One index build at a time per database.
    let indexing = NSLock()
    /// One build of an index at a time across processes.
    let buildLocks: IndexBuildLocks
    let options: Options
    private let workers: LazyWorkerPool
    /// Purges documents as they expire (see ``setExpiration(_:for:)``).
    let expirationTimer: ExpirationTimer

    /// Opens the database in `directory`, creating it when missing.
    ///
    /// Opening never waits for another process's write. A directory holding
    /// another program's LMDB file, or a damaged one (a truncated data file),
    /// is refused with ``SetteeErrorCode/notSetteeDatabase`` or
    /// ``SetteeErrorCode/databaseDamaged``; a path that is a file, with
    /// ``StorageError`` saying so.
    ///
    /// - Parameters:
    ///   - directory: The database directory.
    ///   - options: Map size, size limit, JavaScript limits and workers.
    ///   - logger: Where the engine reports what it does (index builds, map
    ///     functions that throw, removed indexes, all at `info`). Without one,
    ///     only warnings and errors are logged.
    public init(at directory: URL, options: Options = Options(), logger: Logger = Database.quietLogger) throws {
        // The views of "language": "query" design documents are find's JSON indexes.
        DesignDocument.queryViews = MangoIndex.views(inDesignDocument:id:databaseIsPartitioned:)
        self.url = directory
        self.logger = logger
        self.options = options
        let environment = try LMDBEnvironment.open(directory: directory, settings: LMDBEnvironment.Settings(
            initialMapSize: options.initialMapSize, maximumMapSize: options.maximumSize, readAhead: options.readAhead,
            readOnly: options.readOnly, createIfMissing: options.createIfMissing, busyTimeout: options.busyTimeout))
        let storage = OpenStorage(environment: environment)
        self.storage = storage
        try DatabaseFormat.check(environment)
        let workers = LazyWorkerPool()
        self.workers = workers
        let designDocumentCache = DesignDocumentCache()
        self.designDocumentCache = designDocumentCache
        let validation = UpdateValidation(database: directory.lastPathComponent, userContext: options.userContext,
                                          designDocuments: designDocumentCache, rule: options.writeRule) {
            try workers.pool(count: options.javaScriptWorkers, configuration: options.javaScript)
        }
        let store = try DocumentStore(environment: environment, logger: logger, validation: validation, sizeLimits: options.sizeLimits,
                                      keepsEarlierRevisions: options.keepsEarlierRevisions)
        // A database an earlier Settee wrote has no kept counts: counted once, here.
        store.keepCountsIfUnknown()
        storeEvenIfClosed = store
        storage.opened(store: store, indexes: try ViewIndexStore(environment: environment))
        buildLocks = try IndexBuildLocks(directory: environment.path)
        expirationTimer = ExpirationTimer(store: store, logger: logger)
        // What expired while the database was closed goes now; the timer takes what expires later.
        if !environment.isReadOnly, try environment.read({ try store.nextExpiration(in: $0) }) != nil {
            do { try store.purgeExpired() } catch { logger.warning("expired documents could not be purged at open", metadata: ["error": "\(error)"]) }
            expirationTimer.arm()
        }
    }

    deinit {
        close()
    }

    /// Closes the database: later calls on it throw ``SetteeErrorCode/closed``.
    ///
    /// Its expiration timer stops, its JavaScript workers end, and its hold
    /// on the storage is given up: the last ``Database`` of the directory
    /// open in the process closes the storage, once the transactions under
    /// way have ended (a call that goes on past that, such as an index
    /// update between two transactions, fails with
    /// ``SetteeErrorCode/closed``). Another ``Database`` of the same
    /// directory goes on working. Change listeners, feeds and live queries
    /// of the directory end with the last. What the workers held, and what
    /// the storage held once the last closes it (LMDB keeps the pages its
    /// largest write dirtied until then), goes back to the system. Closing
    /// twice does nothing more; a database is also closed when it is
    /// released. Do not call it inside a ``write(_:)-3j48g`` batch or a
    /// ``forEachChange(since:limit:_:)-6r2ut`` body.
    public func close() {
        guard let environment = storage.close() else { return }
        expirationTimer.cancel()
        let workersEnded = workers.close()
        // The last Database of the directory: feeds, live queries and listeners end.
        let storageClosed = environment.release()
        if storageClosed { storeEvenIfClosed.commits.close() }
        // The workers' engines and the storage (LMDB keeps every page a write
        // dirtied for the next, until it closes) freed their memory into the
        // C library's heap, which keeps it unless asked: tens of megabytes
        // after an index build, the size of the largest write.
        if workersEnded || storageClosed { ProcessMemory.returnFreeMemory() }
    }

    /// The logger a database uses when given none: warnings and errors only.
    public static var quietLogger: Logger {
        var logger = Logger(label: "settee")
        logger.logLevel = .warning
        return logger
    }

    /// The JavaScript workers, started on first use (about 17 ms each).
    func javaScript() throws -> JavaScriptWorkerPool {
        try workers.pool(count: options.javaScriptWorkers, configuration: options.javaScript)
    }

    /// The JavaScript workers, as the workers views run their functions on:
    /// for work called off with the calling thread's ``Cancellation``, if any.
    func viewFunctions() throws -> any FunctionWorkers {
        JavaScriptFunctionWorkers(pool: try javaScript(), cancellation: Cancellation.current)
    }

    // MARK: Documents

    /// Writes a document given as a JSON object. Without `_id` an id is
    /// generated; to update an existing document, `_rev` must name its current
    /// revision; `"_deleted": true` deletes.
    /// - Throws: ``DocumentError`` for bad input or a conflict,
    ///   ``SetteeErrorCode/documentTooLarge`` for a document over
    ///   ``Options/maximumDocumentBytes`` (a design document: over
    ///   ``Options/maximumDesignDocumentBytes``), ``SetteeErrorCode/forbidden``
    ///   or ``SetteeErrorCode/unauthorized`` when a design document's
    ///   `validate_doc_update` refuses it, and ``DesignDocumentError`` for a
    ///   `_design/` document that could not be used (checked as loading one
    ///   from a file checks it: an unsupported built-in reduce, a bad
    ///   `_top_N` rank…) or whose views would take the database past the
    ///   indexes it can hold.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func put(_ json: String) throws -> WriteResult {
        var json = json
        return try json.withUTF8 { try put(json: UnsafeRawBufferPointer($0)) }
    }

    /// Writes a document given as UTF-8 JSON bytes.
    @discardableResult
    package func put(json: UnsafeRawBufferPointer) throws -> WriteResult {
        try write(try DocumentEdit(json: json, sizeLimits: options.sizeLimits))
    }

    /// Writes one validated edit in its own transaction.
    func write(_ edit: DocumentEdit) throws -> WriteResult {
        // A design document is checked against the index limit before it commits.
        if edit.id?.hasPrefix("_design/") == true { return try write(runsBodyOnce: false) { try $0.apply(edit) } }
        return try store.write(edit)
    }

    /// The document with this id, or nil when there is none or it was deleted.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func document(_ id: String) throws -> Document? {
        try store.document(id)
    }

    /// Every `_local/` document (replication checkpoints among them), in the
    /// order of their ids' bytes, as `GET /{db}/_local_docs` lists them.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func localDocuments() throws -> [Document] {
        try store.localDocuments()
    }

    /// The document's current revision, deleted or not (a tombstone has
    /// ``Document/isDeleted`` set), or nil when the id was never written.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func documentIncludingDeleted(_ id: String) throws -> Document? {
        try environment.read { try store.record(id, in: $0) }
    }

    /// Deletes a document, leaving a tombstone that keeps its place in the
    /// changes feed.
    /// - Parameters:
    ///   - id: The document's `_id`.
    ///   - revision: The current revision; `nil` deletes whatever is current.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func delete(_ id: String, revision: Revision?) throws -> WriteResult {
        try write(runsBodyOnce: false) { try $0.delete(id, revision: revision) }
    }

    /// The documents changed after sequence number `since`, oldest first; each
    /// document appears once, at its latest change.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func changes(since: UInt64 = 0, limit: Int? = nil) throws -> [Change] {
        try store.changes(since: since, limit: limit)
    }

    /// The changes ``changes(since:limit:)-9rqg7`` returns, handed to `body` one by
    /// one as they are read instead of held, so memory stays the same however
    /// many there are. They are read in one read transaction (one snapshot);
    /// while `body` runs, writers go on, but the pages they replace cannot be
    /// reused until the call returns. `limit` counts as it does there.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func forEachChange(since: UInt64 = 0, limit: Int? = nil, _ body: (Change) throws -> Void) throws {
        try environment.read { transaction in
            var count = 0
            try store.forEachChange(since: since, in: transaction) { sequence, id, record in
                try body(Change(sequence: sequence, id: String(decoding: id, as: UTF8.self), revision: record.revision, isDeleted: record.isDeleted))
                count += 1
                return limit.map { count < $0 } ?? true
            }
        }
    }

    /// The sequence number of the latest write.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func lastSequence() throws -> UInt64 {
        try store.lastSequence()
    }

    // MARK: Import

    /// Imports documents from a file of NDJSON (one JSON object per line) or a
    /// JSON array of objects, streamed in large transactions. Bad documents are
    /// reported by line and skipped; the others are written. A document over
    /// ``Options/maximumDocumentBytes`` is refused
    /// (``SetteeErrorCode/documentTooLarge``) without being held whole: once
    /// its line (or array element) runs past the limit, the rest of it is
    /// read and dropped.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func importDocuments(from file: URL, progress: (ImportProgress) -> Void = { _ in }) throws -> ImportReport {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? nil
        return try importDocuments(from: handle, totalBytes: size, progress: progress)
    }

    /// Imports documents read from a file handle (a pipe or standard input too).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func importDocuments(from handle: FileHandle, totalBytes: Int? = nil, progress: (ImportProgress) -> Void = { _ in }) throws -> ImportReport {
        let importer = try makeImporter()
        let report = try importer.run(totalBytes: totalBytes, read: { try handle.read(upToCount: importer.chunkBytes) }, progress: progress)
        // Imported design documents may have replaced views.
        try removeUnusedIndexes()
        return report
    }

    /// An importer into this database: a design document that would take it
    /// past its index limit is refused with its line.
    private func makeImporter() throws -> DocumentImporter {
        try DocumentImporter(store: store, check: { [self] edit, transaction in try refuseOverIndexLimit(edit, in: transaction) })
    }

    /// Imports documents from NDJSON or JSON-array bytes in memory.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func importDocuments(_ data: Data, progress: (ImportProgress) -> Void = { _ in }) throws -> ImportReport {
        let importer = try makeImporter()
        var offset = 0
        let report = try importer.run(totalBytes: data.count, read: {
            guard offset < data.count else { return nil }
            let end = min(offset + importer.chunkBytes, data.count)
            defer { offset = end }
            return data.subdata(in: offset..<end)
        }, progress: progress)
        // Imported design documents may have replaced views.
        try removeUnusedIndexes()
        return report
    }

    // MARK: Information

    /// What the database holds.
    ///
    /// The counts are kept by every write, in its transaction: this reads a
    /// record, and costs the same however many documents there are.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func info() throws -> DatabaseInfo {
        let (counts, sequence) = try environment.read { transaction in
            (try store.counts(in: transaction), try store.lastSequence(in: transaction))
        }
        return try DatabaseInfo(
            path: environment.path,
            documentCount: counts.live,
            deletedDocumentCount: counts.deleted,
            updateSequence: sequence,
            fileSize: environment.fileSize,
            mapSize: environment.mapSize)
    }
}

/// What a database holds, as `settee info` shows it.
public struct DatabaseInfo: Sendable, Equatable {
    public var path: String
    /// Live documents.
    public var documentCount: Int
    /// Tombstones of deleted documents.
    public var deletedDocumentCount: Int
    /// The sequence number of the latest write.
    public var updateSequence: UInt64
    /// Bytes of the data file on disk.
    public var fileSize: Int
    /// The current size of the memory map (it grows when full).
    public var mapSize: Int
}

/// The storage of an open database; nil once closed.
private final class OpenStorage: @unchecked Sendable {
    private let lock = NSLock()
    private var environment: LMDBEnvironment?
    private var store: DocumentStore?
    private var indexes: ViewIndexStore?
    /// Until ``opened(store:indexes:)``, a failed open is released by deinit.
    private var isComplete = false

    init(environment: LMDBEnvironment) {
        self.environment = environment
    }

    deinit {
        if !isComplete { _ = environment?.release() }
    }

    func opened(store: DocumentStore, indexes: ViewIndexStore) {
        lock.withLock {
            self.store = store
            self.indexes = indexes
            isComplete = true
        }
    }

    func get(_ url: URL) throws(StorageError) -> (environment: LMDBEnvironment, store: DocumentStore, indexes: ViewIndexStore) {
        guard let open = lock.withLock({ environment.flatMap { environment in store.flatMap { store in indexes.map { (environment, store, $0) } } } }) else {
            throw LMDBEnvironment.closedError(url.path)
        }
        return open
    }

    /// Forgets the storage; the environment to release, or nil when closed
    /// already (or never opened completely, which deinit releases).
    func close() -> LMDBEnvironment? {
        lock.withLock {
            guard isComplete else { return nil }
            defer { (environment, store, indexes) = (nil, nil, nil) }
            return environment
        }
    }
}

/// Starts the JavaScript workers on first use.
private final class LazyWorkerPool: @unchecked Sendable {
    private let lock = NSLock()
    private var pool: JavaScriptWorkerPool?

    func pool(count: Int, configuration: JavaScriptConfiguration) throws -> JavaScriptWorkerPool {
        lock.lock()
        defer { lock.unlock() }
        if let pool { return pool }
        let created = try JavaScriptWorkerPool(count: count, configuration: configuration)
        pool = created
        return created
    }

    /// Lets the workers end, once the calls that use them have returned;
    /// says whether any had started.
    @discardableResult
    func close() -> Bool {
        let pool = lock.withLock { () -> JavaScriptWorkerPool? in
            defer { self.pool = nil }
            return self.pool
        }
        // Dropped as this returns, outside the lock: with no call under way, the workers end then.
        return pool != nil
    }
}
