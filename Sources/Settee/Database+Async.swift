public import Foundation
public import SetteeCore
public import SetteeStorage
import SetteeJavaScript
public import SetteeViews

/// Async forms of ``Database``'s methods.
///
/// Each runs its work on a thread of Settee's own, never on Swift's cooperative
/// threads: an index build, a large import or a write waiting for another
/// process blocks a thread of its own, not the pool every task shares; and
/// each call under way has its own, so long calls never hold short ones back. From
/// async code they are the ones called; the synchronous forms are marked
/// unavailable there (`noasync`), so a blocking call cannot slip in.
///
/// Cancelling the task that awaits one calls it off where that is safe: a
/// query or index update stops its JavaScript (the running map or reduce
/// function is interrupted) and its index build at the next batch, keeping
/// what it committed (the next update goes on from there), and throws
/// `CancellationError`; a query waiting for another thread's build of the
/// index stops waiting. A write is not interrupted: it commits or not as a
/// whole, and an operation that completes returns its result even when its
/// task was cancelled meanwhile.
///
/// ```swift
/// let task = Task { try await db.query("app/by_title") }
/// task.cancel()                               // the query throws CancellationError
/// ```
extension Database {
    /// The threads the async forms run their work on: one for each call under
    /// way, so that long calls (index builds, full scans) never hold short ones.
    private static let backgroundThreads = ElasticThreadPool(name: "settee.database")

    /// Runs `body` on a Settee thread, off Swift's cooperative threads. The
    /// calling task's cancellation is `Cancellation.current` while it
    /// runs: what `body` does with JavaScript and index builds stops when the
    /// task is cancelled, and it then throws `CancellationError`.
    package func background<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let cancellation = Cancellation()
        if let host = BlockingWork.currentHost {
            // A thread that may block (a server's request thread): the work runs here.
            return try await withTaskCancellationHandler {
                try host.runBlocking { try Self.run(body, cancellation: cancellation) }
            } onCancel: {
                cancellation.cancel()
            }
        }
        // The writer, carried to the queue (task-locals stay with the task).
        let validationContext = Database.validationContext
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                Self.backgroundThreads.run {
                    continuation.resume(with: Result {
                        try Database.$validationContext.withValue(validationContext) {
                            try Self.run(body, cancellation: cancellation)
                        }
                    })
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// Runs `body` with `cancellation` current; a JavaScript function
    /// interrupted for the cancellation throws `CancellationError`.
    private static func run<T>(_ body: () throws -> T, cancellation: Cancellation) throws -> T {
        do {
            return try cancellation.makeCurrent(body)
        } catch let error as JavaScriptError where error.kind == .interrupted && cancellation.isCancelled {
            // A function interrupted for the cancellation, its error not yet turned into one.
            throw CancellationError()
        }
    }

    // MARK: Documents

    /// Writes a document given as a JSON object (see `put(_:)`).
    @discardableResult
    public func put(_ json: String) async throws -> WriteResult {
        try await background { try self.put(json) }
    }

    /// Writes `value` as the document `id` (see `put(_:id:revision:)`).
    ///
    /// The value is encoded where the caller runs (on its actor, if it has
    /// one: `isolation` is the caller's, filled in by the compiler), before
    /// the work leaves for a Settee queue, so its type need not be
    /// `Sendable`: a main-actor model writes its own non-`Sendable` values.
    @discardableResult
    public func put(_ value: some Encodable, id: String, revision: Revision? = nil, coding: DocumentCoding? = nil,
                    isolation: isolated (any Actor)? = #isolation) async throws -> WriteResult {
        let edit = try DocumentEdit(value, id: id, revision: revision, coding: coding ?? options.coding, sizeLimits: options.sizeLimits)
        return try await background { try self.write(edit) }
    }

    /// The document `id` decoded as `T`, or nil (see `get(_:as:)`).
    ///
    /// The document is read on a Settee queue and decoded in the calling
    /// task, so `T` need not be `Sendable`.
    public func get<T: Decodable>(_ id: String, as type: T.Type = T.self, coding: DocumentCoding? = nil) async throws -> T? {
        try await document(id)?.decoded(as: T.self, coding: coding ?? options.coding)
    }

    /// Runs `body` with a batch whose writes commit in one transaction (see `write(_:)`).
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (WriteBatch) throws -> T) async throws -> T {
        try await background { try self.write(body) }
    }

    /// The document with this id, or nil (see `document(_:)`).
    public func document(_ id: String) async throws -> Document? {
        try await background { try self.document(id) }
    }

    /// Every `_local/` document (see `localDocuments()`).
    public func localDocuments() async throws -> [Document] {
        try await background { try self.localDocuments() }
    }

    /// The document's current revision, deleted or not (see `documentIncludingDeleted(_:)`).
    public func documentIncludingDeleted(_ id: String) async throws -> Document? {
        try await background { try self.documentIncludingDeleted(id) }
    }

    /// Deletes a document (see `delete(_:revision:)`).
    @discardableResult
    public func delete(_ id: String, revision: Revision?) async throws -> WriteResult {
        try await background { try self.delete(id, revision: revision) }
    }

    /// The documents changed after `since` (see `changes(since:limit:)`).
    public func changes(since: UInt64 = 0, limit: Int? = nil) async throws -> [Change] {
        try await background { try self.changes(since: since, limit: limit) }
    }

    /// Hands the changes after `since` to `body` one by one as they are read
    /// (see `forEachChange(since:limit:_:)`); `body` runs on a Settee queue.
    /// Cancelling the task stops the reading before the next change, with `CancellationError`.
    public func forEachChange(since: UInt64 = 0, limit: Int? = nil, _ body: @escaping @Sendable (Change) throws -> Void) async throws {
        try await background {
            let cancellation = Cancellation.current
            try self.forEachChange(since: since, limit: limit) { try cancellation?.checkCancelled(); try body($0) }
        }
    }

    /// The sequence number of the latest write (see `lastSequence()`).
    public func lastSequence() async throws -> UInt64 {
        try await background { try self.lastSequence() }
    }

    /// What the database holds (see `info()`).
    public func info() async throws -> DatabaseInfo {
        try await background { try self.info() }
    }

    // MARK: Import

    /// Imports NDJSON or a JSON array of documents from a file (see
    /// `importDocuments(from:progress:)`); `progress` is called on a Settee queue.
    @discardableResult
    public func importDocuments(from file: URL, progress: @escaping @Sendable (ImportProgress) -> Void = { _ in }) async throws -> ImportReport {
        try await background { try self.importDocuments(from: file, progress: progress) }
    }

    /// Imports documents read from a file handle (see
    /// `importDocuments(from:totalBytes:progress:)`).
    @discardableResult
    public func importDocuments(from handle: FileHandle, totalBytes: Int? = nil,
                                progress: @escaping @Sendable (ImportProgress) -> Void = { _ in }) async throws -> ImportReport {
        try await background { try self.importDocuments(from: handle, totalBytes: totalBytes, progress: progress) }
    }

    /// Imports documents from NDJSON or JSON-array bytes in memory (see
    /// `importDocuments(_:progress:)`).
    @discardableResult
    public func importDocuments(_ data: Data, progress: @escaping @Sendable (ImportProgress) -> Void = { _ in }) async throws -> ImportReport {
        try await background { try self.importDocuments(data, progress: progress) }
    }

    // MARK: Design documents and views

    /// Loads design documents from a file or folder (see `loadDesignDocuments(from:)`).
    @discardableResult
    public func loadDesignDocuments(from url: URL) async throws -> [DesignDocument] {
        try await background { try self.loadDesignDocuments(from: url) }
    }

    /// The design document `_design/NAME` (see `designDocument(_:)`).
    public func designDocument(_ name: String) async throws -> DesignDocument? {
        try await background { try self.designDocument(name) }
    }

    /// Every design document stored in the database (see `designDocuments()`).
    public func designDocuments() async throws -> [DesignDocument] {
        try await background { try self.designDocuments() }
    }

    /// Queries a view (`DDOC/VIEW`), updating its index first unless the
    /// options say otherwise (see `query(_:options:progress:)`);
    /// `progress` is called on a Settee queue while the index is brought up to date.
    ///
    /// Cancelling the task interrupts the view's JavaScript and stops the
    /// index update at its next batch (what it committed stays): the query
    /// throws `CancellationError`.
    public func query(_ path: String, options: ViewQueryOptions = ViewQueryOptions(),
                      progress: @escaping @Sendable (IndexProgress) -> Void = { _ in }) async throws -> ViewResult {
        try await background { try self.query(path, options: options, progress: progress) }
    }

    /// Queries the view `view` of the design document `designDocument`, as
    /// `query(_:options:progress:)` does.
    public func query(designDocument name: String, view viewName: String, options: ViewQueryOptions = ViewQueryOptions(),
                      progress: @escaping @Sendable (IndexProgress) -> Void = { _ in }) async throws -> ViewResult {
        try await background { try self.query(designDocument: name, view: viewName, options: options, progress: progress) }
    }

    /// Queries a view, handing over the result as it is read (see
    /// `forEachRow(_:options:progress:header:_:)`); `header`
    /// and `body` run on a Settee queue. Cancelling the task stops the query
    /// (its index update too) before the next row, with `CancellationError`.
    public func forEachRow(_ path: String, options: ViewQueryOptions = ViewQueryOptions(),
                           progress: @escaping @Sendable (IndexProgress) -> Void = { _ in },
                           header: @escaping @Sendable (ViewResultHeader) throws -> Void = { _ in },
                           _ body: @escaping @Sendable (ViewRow) throws -> Void) async throws {
        try await background {
            let cancellation = Cancellation.current
            try self.forEachRow(path, options: options, progress: progress, header: header) { try cancellation?.checkCancelled(); try body($0) }
        }
    }

    /// Brings every view's index up to date (see `updateIndexes(progress:)`);
    /// `progress` is called on a Settee queue.
    ///
    /// Cancelling the task interrupts the views' JavaScript and stops the
    /// update at its next batch, keeping what it committed: the next update
    /// goes on from there. It then throws `CancellationError`.
    public func updateIndexes(progress: @escaping @Sendable (IndexProgress) -> Void = { _ in }) async throws {
        try await background { try self.updateIndexes(progress: progress) }
    }

    /// CouchDB's `_all_docs` (see `allDocuments(options:)`).
    public func allDocuments(options: ViewQueryOptions = ViewQueryOptions()) async throws -> ViewResult {
        try await background { try self.allDocuments(options: options) }
    }

    /// CouchDB's `_all_docs`, handed over as it is read (see
    /// `forEachDocumentRow(options:header:_:)`); `header` and `body` run on a Settee queue.
    /// Cancelling the task stops the reading before the next row, with `CancellationError`.
    public func forEachDocumentRow(options: ViewQueryOptions = ViewQueryOptions(),
                                   header: @escaping @Sendable (ViewResultHeader) throws -> Void = { _ in },
                                   _ body: @escaping @Sendable (ViewRow) throws -> Void) async throws {
        try await background {
            let cancellation = Cancellation.current
            try self.forEachDocumentRow(options: options, header: header) { try cancellation?.checkCancelled(); try body($0) }
        }
    }

    /// Per view: its signature, how far its index is built, rows, bytes, map
    /// errors (see `viewInfo()`).
    public func viewInfo() async throws -> [ViewInfo] {
        try await background { try self.viewInfo() }
    }

    // MARK: Attachments

    /// Attachment `name` of document `id`, its bytes read into memory (see `attachment(_:of:)`).
    public func attachment(_ name: String, of id: String) async throws -> Blob? {
        try await background { try self.attachment(name, of: id) }
    }

    /// Hands the bytes of an attachment to `body` a chunk at a time (see
    /// `readAttachment(_:of:_:)`); `body` runs on a Settee queue.
    @discardableResult
    public func readAttachment(_ name: String, of id: String,
                               _ body: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void) async throws -> Blob {
        try await background { try self.readAttachment(name, of: id, body) }
    }

    /// Writes the bytes of an attachment to a file (see `writeAttachment(_:of:to:)`).
    @discardableResult
    public func writeAttachment(_ name: String, of id: String, to url: URL) async throws -> Blob {
        try await background { try self.writeAttachment(name, of: id, to: url) }
    }

    /// Adds or replaces attachment `name` of document `id` (see `putAttachment(_:named:of:revision:)`).
    @discardableResult
    public func putAttachment(_ blob: Blob, named name: String, of id: String, revision: Revision?) async throws -> WriteResult {
        try await background { try self.putAttachment(blob, named: name, of: id, revision: revision) }
    }

    /// Removes attachment `name` from document `id` (see `removeAttachment(_:of:revision:)`).
    @discardableResult
    public func removeAttachment(_ name: String, of id: String, revision: Revision) async throws -> WriteResult {
        try await background { try self.removeAttachment(name, of: id, revision: revision) }
    }

    /// The document with its attachments' bytes inline (see `document(_:attachments:since:)`).
    public func document(_ id: String, attachments: Bool, since: [Revision]? = nil) async throws -> Document? {
        try await background { try self.document(id, attachments: attachments, since: since) }
    }

    // MARK: Purge and expiration

    /// Purges several documents in one transaction (see `purge(_:)`).
    @discardableResult
    public func purge(_ requests: [String: [Revision]]) async throws -> PurgeResult {
        try await background { try self.purge(requests) }
    }

    /// How many documents have been purged, ever (see `purgeSequence()`).
    public func purgeSequence() async throws -> UInt64 {
        try await background { try self.purgeSequence() }
    }

    /// When a document expires, or nil (see `expiration(of:)`).
    public func expiration(of id: String) async throws -> Date? {
        try await background { try self.expiration(of: id) }
    }

    /// The documents with an expiration time before `date` (see `documentsExpiring(before:)`).
    public func documentsExpiring(before date: Date) async throws -> [DocumentExpiration] {
        try await background { try self.documentsExpiring(before: date) }
    }

    /// Purges the documents whose expiration time has passed, now (see `purgeExpiredDocuments()`).
    @discardableResult
    public func purgeExpiredDocuments() async throws -> PurgeResult? {
        try await background { try self.purgeExpiredDocuments() }
    }

    // MARK: Verification

    /// Reads the whole database and checks it (see `verify()`).
    public func verify() async throws -> VerificationReport {
        try await background { try self.verify() }
    }
}
