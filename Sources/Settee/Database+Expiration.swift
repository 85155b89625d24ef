public import Foundation
import Logging
import SetteeCore
public import SetteeStorage

/// A document's expiration time, as ``Database/documentsExpiring(before:)-7in5r`` lists them.
public struct DocumentExpiration: Sendable, Equatable {
    /// The document's `_id`.
    public var id: String
    /// When it expires (to the millisecond).
    public var expiration: Date
}

extension Database {
    /// Sets when a document expires, or with `nil` clears it (Couchbase
    /// Lite's `setDocumentExpiration(withID:expiration:)`). Past its time the
    /// document is purged (``purge(_:revisions:)-4e468``): by a timer while the
    /// database is open in this process (within a second), and when a
    /// database is opened for writing. Until the purge runs, the document
    /// already reads as missing: ``document(_:)-88g0i`` returns nil, and queries and
    /// ``allDocuments(options:)-2p5wn`` purge what has expired before they answer.
    ///
    /// Writing the document again keeps its expiration; purging it clears it.
    /// Times are kept to the millisecond.
    /// - Throws: ``DocumentError`` (`not_found`) when setting a time on a
    ///   document that is missing or deleted; `bad_request` for a `_local/` one.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func setExpiration(_ date: Date?, for id: String) throws {
        try store.setExpiration(date, for: id)
        if date != nil { expirationTimer.arm() }
    }

    /// When a document expires (Couchbase Lite's `getDocumentExpiration`),
    /// or nil when it has no expiration time.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func expiration(of id: String) throws -> Date? {
        try environment.read { try store.expiration(of: id, in: $0) }
    }

    /// The documents with an expiration time before `date`, soonest first.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func documentsExpiring(before date: Date) throws -> [DocumentExpiration] {
        try environment.read { try store.expiring(before: date, in: $0) }.map { DocumentExpiration(id: $0.id, expiration: $0.expiration) }
    }

    /// Purges the documents whose expiration time has passed, now; returns
    /// what was purged, or nil when nothing had expired. The timer and
    /// queries do this by themselves.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func purgeExpiredDocuments() throws -> PurgeResult? {
        try store.purgeExpired()
    }

    /// Sets or clears when a document expires, on a background thread (see ``setExpiration(_:for:)``).
    public func setExpiration(_ date: Date?, for id: String) async throws {
        try await background { try self.setExpiration(date, for: id) }
    }

    /// Purges what has expired, unless the database is read-only (there,
    /// expired documents still read as missing through ``document(_:)``).
    func purgeExpiredIfDue() throws {
        guard try !environment.isReadOnly else { return }
        try store.purgeExpired()
    }
}

/// Purges expired documents while a ``Database`` is open: armed when it
/// opens with expiration times set, or when one is set; fires at the next
/// expiration time (at least every second, to see times other processes
/// set), and stops once no document has one.
final class ExpirationTimer: @unchecked Sendable {
    private let lock = NSLock()
    private var timer: (any DispatchSourceTimer)?
    private weak var store: DocumentStore?
    private let logger: Logger
    private static let queue = DispatchQueue(label: "settee.expiration", qos: .utility)

    init(store: DocumentStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Starts the timer unless it runs.
    func arm() {
        lock.lock()
        defer { lock.unlock() }
        guard timer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: Self.queue)
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.schedule(deadline: .now(), leeway: .milliseconds(20))
        self.timer = timer
        timer.resume()
    }

    func cancel() {
        lock.lock()
        defer { lock.unlock() }
        timer?.cancel()
        timer = nil
    }

    private func fire() {
        guard let store else { return cancel() }
        var next: Date?
        do {
            try store.purgeExpired()
            next = try store.environment.read { try store.nextExpiration(in: $0) }
        } catch {
            // A write lock held elsewhere for long, a full disk: tried again in a second.
            logger.warning("expired documents could not be purged", metadata: ["error": "\(error)"])
            next = Date().addingTimeInterval(1)
        }
        lock.lock()
        defer { lock.unlock() }
        guard let timer else { return }
        guard let next else {
            timer.cancel()
            self.timer = nil
            return
        }
        let wait = min(max(next.timeIntervalSinceNow, 0), 1)
        timer.schedule(deadline: .now() + wait, leeway: .milliseconds(20))
    }

    deinit {
        timer?.cancel()
    }
}
