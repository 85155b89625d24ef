import Foundation
import Logging
import SetteeCore
import SetteeStorage

/// The change listeners of one database directory in this process, fed by
/// one task: each commit (of any process) wakes it once, however many
/// listeners there are, and it hands each listener the changes it asked for.
///
/// With document listeners only, it looks their documents up when that is
/// less work than reading the changes (a large import); otherwise it reads
/// the changes after the last it handled, 1,024 at a time, and finds each
/// one's listeners by id. The task runs while there are listeners.
final class ChangeListeners: @unchecked Sendable {
    private struct Listener {
        /// nil: every change.
        let documentID: String?
        let queue: DispatchQueue
        /// The last sequence when it was added: it gets only later changes.
        let since: UInt64
        let token: ListenerToken
        let call: @Sendable ([Change]) -> Void
    }

    private let store: DocumentStore
    private let logger: Logger
    private let lock = NSLock()
    private var listeners: [Int: Listener] = [:]
    private var byDocument: [String: Set<Int>] = [:]
    private var everyChange: Set<Int> = []
    private var nextListener = 0
    private var task: Task<Void, Never>?
    /// The sequence up to which changes have been handed out.
    private var cursor: UInt64 = 0

    /// How many changes one read takes (and one database listener call carries, at most).
    static let batchSize = 1024

    private init(store: DocumentStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: WeakListeners] = [:]

    private struct WeakListeners {
        weak var listeners: ChangeListeners?
    }

    /// The listeners of the database `store` holds.
    static func shared(store: DocumentStore, logger: Logger) -> ChangeListeners {
        registryLock.withLock {
            let path = store.environment.path
            // Listeners of an environment closed since stay with it.
            if let existing = registry[path]?.listeners, existing.store.environment === store.environment { return existing }
            let listeners = ChangeListeners(store: store, logger: logger)
            registry = registry.filter { $0.value.listeners != nil }
            registry[path] = WeakListeners(listeners: listeners)
            return listeners
        }
    }

    /// Adds a listener of one document (or of every change, for a nil id),
    /// called on `queue` with its changes after the last sequence now.
    func add(documentID: String?, queue: DispatchQueue, _ call: @escaping @Sendable ([Change]) -> Void) -> ListenerToken {
        let token = ListenerToken()
        lock.withLock {
            // Read under the lock: the task hands out no change at or before it to this listener,
            // and none after it goes by unseen (the task's cursor is never past the last sequence).
            let since = (try? store.lastSequence()) ?? store.commits.latestKnown
            nextListener += 1
            let id = nextListener
            listeners[id] = Listener(documentID: documentID, queue: queue, since: since, token: token, call: call)
            if let documentID {
                byDocument[documentID, default: []].insert(id)
            } else {
                everyChange.insert(id)
            }
            token.removal = { [weak self] in self?.remove(id) }
            if task == nil {
                cursor = since
                task = Task { await self.follow() }
            }
        }
        return token
    }

    private func remove(_ id: Int) {
        lock.withLock {
            guard let listener = listeners.removeValue(forKey: id) else { return }
            if let documentID = listener.documentID {
                byDocument[documentID]?.remove(id)
                if byDocument[documentID]?.isEmpty == true { byDocument[documentID] = nil }
            } else {
                everyChange.remove(id)
            }
            if listeners.isEmpty {
                // Under the lock: a cancelled task hands out nothing more.
                task?.cancel()
                task = nil
            }
        }
    }

    /// Hands out changes as they commit, until cancelled.
    private func follow() async {
        while true {
            let plan: (from: UInt64, documents: [String]?)? = lock.withLock {
                if Task.isCancelled { return nil }
                return (cursor, everyChange.isEmpty ? Array(byDocument.keys) : nil)
            }
            guard let (from, documents) = plan else { return }
            var next = from
            do {
                let (last, changes, complete) = try read(after: from, documents: documents)
                next = complete ? Swift.max(from, last) : changes.last?.sequence ?? from
                let handed = lock.withLock {
                    if Task.isCancelled { return false }
                    handOut(changes)
                    cursor = next
                    return true
                }
                guard handed else { return }
                if !complete { continue }
            } catch SetteeErrorCode.closed {
                return
            } catch {
                logger.error("change listeners could not read the changes: \(error)", metadata: ["db.path": .string(store.environment.path)])
                // Not at once: what failed (a damaged record) would fail again.
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            guard await store.commits.wait(after: next) else { return }
        }
    }

    /// The changes after `from` in one snapshot, oldest first: of `documents`
    /// only, looked up one by one, when there are fewer of them than changes.
    /// `complete`: they reach the snapshot's last sequence.
    private func read(after from: UInt64, documents: [String]?) throws -> (last: UInt64, changes: [Change], complete: Bool) {
        try store.environment.read { transaction in
            let last = try store.lastSequence(in: transaction)
            guard last > from else { return (last, [], true) }
            if let documents, UInt64(documents.count) < last - from {
                let changes = try documents.compactMap { try store.latestChange(of: $0, in: transaction) }
                    .filter { $0.sequence > from }
                    .sorted { $0.sequence < $1.sequence }
                return (last, changes, true)
            }
            var changes: [Change] = []
            try store.forEachChange(since: from, in: transaction) { sequence, id, record in
                changes.append(Change(sequence: sequence, id: String(decoding: id, as: UTF8.self),
                                      revision: record.revision, isDeleted: record.isDeleted))
                return changes.count < Self.batchSize
            }
            return (last, changes, changes.count < Self.batchSize)
        }
    }

    /// Queues each listener's call for `changes` (with the lock held).
    private func handOut(_ changes: [Change]) {
        guard !changes.isEmpty else { return }
        for id in everyChange {
            guard let listener = listeners[id] else { continue }
            let theirs = changes.filter { $0.sequence > listener.since }
            if !theirs.isEmpty { listener.token.deliver(on: listener.queue) { listener.call(theirs) } }
        }
        guard !byDocument.isEmpty else { return }
        for change in changes {
            for id in byDocument[change.id] ?? [] {
                guard let listener = listeners[id], change.sequence > listener.since else { continue }
                listener.token.deliver(on: listener.queue) { listener.call([change]) }
            }
        }
    }
}
