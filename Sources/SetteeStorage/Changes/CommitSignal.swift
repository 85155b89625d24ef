import Foundation
import SetteeCore

/// Wakes the tasks that wait for a database to move past a sequence number.
/// Every committed document write signals it with the database's new last
/// sequence; live queries, continuous changes feeds and change listeners wait
/// on it instead of polling.
///
/// Writes of other processes signal it too: the first wait starts a
/// ``CommitWatch`` on the database, which reads the last sequence again
/// whenever a transaction commits there.
///
/// One signal per database directory in the process, shared by every
/// ``Database`` opened on it (as they share the storage).
package final class CommitSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var latest: UInt64
    private var waiters: [Int: (after: UInt64, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var nextWaiter = 0

    private let environment: LMDBEnvironment
    /// Reads the database's last sequence in a transaction.
    private let readLatest: @Sendable (LMDBTransaction) throws -> UInt64
    /// Set by the first wait; the watch stays until the signal goes.
    private var watchStarted = false
    private var watch: CommitWatch?
    /// Set when the storage closed: waits end at once.
    private var isClosed = false

    private init(environment: LMDBEnvironment, latest: @escaping @Sendable (LMDBTransaction) throws -> UInt64) throws {
        self.environment = environment
        self.readLatest = latest
        self.latest = try environment.read(latest)
    }

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: WeakSignal] = [:]

    private struct WeakSignal {
        weak var signal: CommitSignal?
    }

    /// The signal of `environment`, created when there is none yet; `latest`
    /// reads the database's last sequence (now, and after commits of other processes).
    package static func shared(environment: LMDBEnvironment,
                               latest: @escaping @Sendable (LMDBTransaction) throws -> UInt64) throws -> CommitSignal {
        let path = environment.path
        return try registryLock.withLock {
            // A signal of an environment closed since stays with it.
            if let existing = registry[path]?.signal, existing.environment === environment { return existing }
            let signal = try CommitSignal(environment: environment, latest: latest)
            registry = registry.filter { $0.value.signal != nil }
            registry[path] = WeakSignal(signal: signal)
            return signal
        }
    }

    /// Starts noticing commits of other processes, once: with `mode` when
    /// this is the first call (the benchmark compares the modes).
    package func watchOtherProcesses(mode: CommitWatch.Mode = .automatic) {
        let first = lock.withLock {
            defer { watchStarted = true }
            return !watchStarted
        }
        guard first else { return }
        let watch = CommitWatch(environment: environment, mode: mode) { [weak self] transaction in
            self?.readAgain(reaching: transaction) ?? true
        }
        lock.withLock { self.watch = watch }
        // Commits made before the watch began.
        _ = readAgain(reaching: 0)
    }

    /// How the watch notices other processes' commits; nil before the first wait.
    package var watchMode: CommitWatch.Mode? {
        lock.withLock { watch?.mode }
    }

    /// Reads the last sequence and wakes whoever it moved past. False when
    /// the snapshot read is older than `transaction`: LMDB writes the meta page
    /// of a commit a moment before new readers see it, so the watch asks again.
    private func readAgain(reaching transaction: Int) -> Bool {
        guard let (snapshot, sequence) = try? environment.read({ ($0.id, try readLatest($0)) }) else { return true }
        guard snapshot >= transaction else { return false }
        committed(sequence)
        return true
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
    /// `true`; or when the calling task is cancelled or the storage closed: `false`.
    package func wait(after sequence: UInt64) async -> Bool {
        watchOtherProcesses()
        let id = lock.withLock {
            nextWaiter += 1
            return nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer: Bool? = lock.withLock {
                    if Task.isCancelled || isClosed { return false }
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

    /// The storage closed: the watch of other processes stops, and every
    /// wait, now and later, returns `false`.
    package func close() {
        let (woken, watch): ([CheckedContinuation<Bool, Never>], CommitWatch?) = lock.withLock {
            isClosed = true
            defer { (waiters, self.watch) = ([:], nil) }
            return (waiters.values.map(\.continuation), self.watch)
        }
        _ = watch
        for continuation in woken { continuation.resume(returning: false) }
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
