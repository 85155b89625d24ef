public import Foundation
import Logging
import SetteeCore
public import SetteeStorage

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
    private var onRemove: (@Sendable () -> Void)?

    init() {}

    /// Stops the listener: once this returns, its callback is not called again
    /// (a call already running finishes).
    public func remove() {
        let onRemove = lock.withLock {
            isRemoved = true
            defer { self.onRemove = nil }
            return self.onRemove
        }
        onRemove?()
    }

    /// What ``remove()`` does besides stopping the calls (set once, before the token is handed out).
    var removal: (@Sendable () -> Void)? {
        get { lock.withLock { onRemove } }
        set { lock.withLock { onRemove = newValue } }
    }

    /// Whether ``remove()`` has been called.
    var removed: Bool {
        lock.withLock { isRemoved }
    }

    /// Calls `body` on `queue` unless the listener has been removed by then.
    func deliver(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            if !removed { body() }
        }
    }
}

extension Database {
    /// Calls `listener` with each document change committed from now on, by
    /// this process or another on the same database, until the token's
    /// ``ListenerToken/remove()``. Couchbase Lite's `addChangeListener`.
    ///
    /// Changes are read as they commit and handed over together (at most
    /// 1024 a call), in sequence order; as in the changes feed, a document
    /// written several times before they are read appears once, at its
    /// latest change. One task per database reads them for all its listeners.
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
        return ChangeListeners.shared(store: storeEvenIfClosed, logger: logger).add(documentID: nil, queue: queue) { changes in
            listener(DatabaseChange(changes: changes))
        }
    }

    /// Calls `listener` with each change of the document `id` committed from
    /// now on (an update, a deletion, a re-creation), by this process or
    /// another on the same database, until the token's
    /// ``ListenerToken/remove()``. Couchbase Lite's `addDocumentChangeListener(withID:)`.
    ///
    /// Writes of other documents do not call it. As in the changes feed,
    /// writes of the document that commit before they are read fold into one
    /// call, for the latest. One task per database serves all its listeners:
    /// a commit costs a lookup by id, not a read per listener.
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
        return ChangeListeners.shared(store: storeEvenIfClosed, logger: logger).add(documentID: id, queue: queue) { changes in
            for change in changes { listener(change) }
        }
    }
}
