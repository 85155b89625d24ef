import Foundation
import Logging
import SetteeCore
import SetteeStorage

/// What one or more commits changed: the ``Database/addChangeListener(queue:_:)``
/// callback's argument.
public struct DatabaseChange: Sendable, Equatable {
    /// The documents changed, oldest first, each once at its latest change.
    public let changes: [Change]

    /// The ids of the documents changed, in the order of ``changes``.
    public var documentIDs: [String] { changes.map(\.id) }
}

/// A registered change listener: keep it, and call ``remove()`` to stop the
/// calls. Dropping the token does not remove the listener.
public final class ListenerToken: @unchecked Sendable {
    private let lock = NSLock()
    private var isRemoved = false
    private var task: Task<Void, Never>?

    init() {}

    /// Stops the listener: once this returns, its callback is not called again
    /// (a call already running finishes).
    public func remove() {
        let task = lock.withLock {
            isRemoved = true
            defer { self.task = nil }
            return self.task
        }
        task?.cancel()
    }

    /// Whether ``remove()`` has been called.
    var removed: Bool {
        lock.withLock { isRemoved }
    }

    /// Runs `follow` until the token is removed.
    func start(_ follow: @escaping @Sendable (ListenerToken) async -> Void) {
        let task = Task { await follow(self) }
        let keep = lock.withLock {
            if isRemoved { return false }
            self.task = task
            return true
        }
        if !keep { task.cancel() }
    }

    /// Calls `body` on `queue` unless the listener has been removed by then.
    func deliver(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            if !removed { body() }
        }
    }
}

extension Database {
    /// How many changes one call of a database listener carries at most.
    static let listenerBatchSize = 1024

    /// Calls `listener` with each document change committed from now on, by
    /// this process or another on the same database, until the token's
    /// ``ListenerToken/remove()``. Couchbase Lite's `addChangeListener`.
    ///
    /// Changes that commit while a call is pending are handed over together
    /// (at most 1024 a call), in sequence order; a document written several
    /// times meanwhile appears once, at its latest change.
    ///
    /// - Parameters:
    ///   - queue: Where `listener` runs; by default a serial queue of its own.
    ///     On a serial queue, calls come one at a time, in order.
    ///   - listener: Called with the changes.
    /// - Returns: The token that removes the listener.
    @discardableResult
    public func addChangeListener(queue: DispatchQueue? = nil,
                                  _ listener: @escaping @Sendable (DatabaseChange) -> Void) -> ListenerToken {
        let queue = queue ?? DispatchQueue(label: "settee.change-listener")
        let start = startingSequence()
        let token = ListenerToken()
        token.start { [self] token in
            var cursor = start
            do {
                while !Task.isCancelled {
                    let (last, changes) = try environment.read { transaction in
                        var changes: [Change] = []
                        try store.forEachChange(since: cursor, in: transaction) { sequence, id, record in
                            changes.append(Change(sequence: sequence, id: String(decoding: id, as: UTF8.self),
                                                  revision: record.revision, isDeleted: record.isDeleted))
                            return changes.count < Self.listenerBatchSize
                        }
                        return (try store.lastSequence(in: transaction), changes)
                    }
                    if let latest = changes.last {
                        cursor = latest.sequence
                        let change = DatabaseChange(changes: changes)
                        token.deliver(on: queue) { listener(change) }
                        continue
                    }
                    cursor = Swift.max(cursor, last)
                    guard await store.commits.wait(after: cursor) else { return }
                }
            } catch {
                logger.error("a change listener stopped: \(error)", metadata: ["db.path": .string(environment.path)])
            }
        }
        return token
    }

    /// Calls `listener` with each change of the document `id` committed from
    /// now on (an update, a deletion, a re-creation), by this process or
    /// another on the same database, until the token's
    /// ``ListenerToken/remove()``. Couchbase Lite's `addDocumentChangeListener(withID:)`.
    ///
    /// Writes of other documents do not call it. Writes of the document that
    /// commit while a call is pending fold into one call, for the latest.
    ///
    /// - Parameters:
    ///   - id: The document's `_id`.
    ///   - queue: Where `listener` runs; by default a serial queue of its own.
    ///   - listener: Called with the document's change.
    /// - Returns: The token that removes the listener.
    @discardableResult
    public func addDocumentChangeListener(withID id: String, queue: DispatchQueue? = nil,
                                          _ listener: @escaping @Sendable (Change) -> Void) -> ListenerToken {
        let queue = queue ?? DispatchQueue(label: "settee.document-change-listener")
        let changes = documentChanges(id, since: startingSequence())
        let token = ListenerToken()
        token.start { [self] token in
            do {
                for try await change in changes {
                    token.deliver(on: queue) { listener(change) }
                }
            } catch {
                logger.error("a document change listener stopped: \(error)",
                             metadata: ["db.path": .string(environment.path), "doc.id": .string(id)])
            }
        }
        return token
    }

    /// The sequence a listener added now starts after: the last one committed.
    private func startingSequence() -> UInt64 {
        (try? lastSequence()) ?? store.commits.latestKnown
    }
}
