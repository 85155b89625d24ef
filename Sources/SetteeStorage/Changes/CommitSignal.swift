import Foundation
import SetteeCore

/// Wakes the tasks that wait for a database to move past a sequence number.
/// Every committed document write signals it with the database's new last
/// sequence; live queries and continuous changes feeds wait on it instead of
/// polling.
///
/// One signal per database directory in the process, shared by every
/// ``Database`` opened on it (as they share the storage).
package final class CommitSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var latest: UInt64
    private var waiters: [Int: (after: UInt64, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var nextWaiter = 0

    private init(latest: UInt64) {
        self.latest = latest
    }

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: WeakSignal] = [:]

    private struct WeakSignal {
        weak var signal: CommitSignal?
    }

    /// The signal of the database at `path`, created with `latest` as its last sequence when there is none yet.
    package static func shared(path: String, latest: () throws -> UInt64) rethrows -> CommitSignal {
        try registryLock.withLock {
            if let existing = registry[path]?.signal { return existing }
            let signal = CommitSignal(latest: try latest())
            registry = registry.filter { $0.value.signal != nil }
            registry[path] = WeakSignal(signal: signal)
            return signal
        }
    }

    /// A write committed; the database's last sequence is now `sequence`.
    package func committed(_ sequence: UInt64) {
        let woken: [CheckedContinuation<Bool, Never>] = lock.withLock {
            latest = max(latest, sequence)
            let ready = waiters.filter { $0.value.after < latest }
            for id in ready.keys { waiters[id] = nil }
            return ready.map(\.value.continuation)
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// Returns when a write past `sequence` has committed (at once if one has):
    /// `true`; or when the calling task is cancelled: `false`.
    package func wait(after sequence: UInt64) async -> Bool {
        let id = lock.withLock {
            nextWaiter += 1
            return nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer: Bool? = lock.withLock {
                    if Task.isCancelled { return false }
                    if latest > sequence { return true }
                    waiters[id] = (sequence, continuation)
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = lock.withLock { waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// The latest sequence this signal has been told of.
    package var latestKnown: UInt64 {
        lock.withLock { latest }
    }

    /// Tasks waiting now (tests check that ended iterations leave none behind).
    package var waiting: Int {
        lock.withLock { waiters.count }
    }
}
