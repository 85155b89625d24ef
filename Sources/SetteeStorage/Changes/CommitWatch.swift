import Foundation
import SetteeCore
#if canImport(Glibc)
import Glibc
#endif

/// Tells when a write transaction may have committed to a database, by any
/// process: what wakes live queries, changes feeds and listeners for writes
/// of other processes.
///
/// LMDB ends every commit by writing the meta page of the data file, through
/// the file (environments are not opened with a writable map), after the
/// pages it changed. On Linux this listens to inotify for modifications of
/// `data.mdb`: no polling, no CPU while nothing is written. On each event it
/// reads the id of the last committed transaction from the map (LMDB's
/// `mdb_env_info`, no transaction, no system call) and calls `committed`
/// only when the id moved. Where inotify is missing (another system, or
/// its per-user limit of instances reached), it reads that id on a timer
/// instead (``Mode/polling(every:)``).
///
/// Started only by a process that waits for commits: one that only writes
/// pays nothing.
package final class CommitWatch: @unchecked Sendable {
    /// How commits are noticed.
    package enum Mode: Sendable, Equatable {
        /// inotify on the data file (Linux), else polling every 50 ms.
        case automatic
        /// The last committed transaction's id, read at this interval.
        case polling(every: Duration)
    }

    /// The default polling interval: half the 100 ms a wake-up may take.
    package static let pollingInterval: Duration = .milliseconds(50)

    private let source: any DispatchSourceProtocol
    /// How commits are noticed here (`.automatic` only when inotify listens).
    package let mode: Mode

    /// Starts watching `environment`. `committed` runs on a serial queue of
    /// the watch with the id of the last committed transaction each time it
    /// changes; it returns false when new readers do not see that transaction
    /// yet, and is then called again a millisecond later (for up to a second).
    package init(environment: LMDBEnvironment, mode: Mode = .automatic, committed: @escaping @Sendable (Int) -> Bool) {
        let queue = DispatchQueue(label: "settee.commit-watch")
        // Read on the watch's queue only.
        let lastSeen = LastTransaction(environment.lastCommittedTransaction)
        let check: @Sendable () -> Void = {
            let transaction = environment.lastCommittedTransaction
            let previous = lastSeen.id
            guard lastSeen.moved(to: transaction) else { return }
            // The next commit after the one seen, and this process's: its writer signals it
            // (or it wrote no document). Two or more commits on: one may be another process's.
            if transaction == previous + 1 && transaction == environment.lastOwnCommit { return }
            Self.deliver(transaction, to: committed, on: queue, triesLeft: 1000)
        }
        #if canImport(Glibc)
        if mode == .automatic, let descriptor = Self.fileEvents(environment.path + "/data.mdb") {
            let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            source.setEventHandler {
                // Drain the queued events: what moved is read from the map.
                var buffer = [UInt8](repeating: 0, count: 4096)
                while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
                check()
            }
            source.setCancelHandler { close(descriptor) }
            self.source = source
            self.mode = .automatic
            source.resume()
            return
        }
        #endif
        let interval: Duration
        if case .polling(let every) = mode { interval = every } else { interval = Self.pollingInterval }
        let nanoseconds = Int(interval / .nanoseconds(1))
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
                        leeway: .nanoseconds(nanoseconds / 5))
        source.setEventHandler(handler: check)
        self.source = source
        self.mode = .polling(every: interval)
        source.resume()
    }

    /// Calls `committed` until it takes `transaction`.
    private static func deliver(_ transaction: Int, to committed: @escaping @Sendable (Int) -> Bool,
                                on queue: DispatchQueue, triesLeft: Int) {
        guard !committed(transaction), triesLeft > 1 else { return }
        queue.asyncAfter(deadline: .now() + .milliseconds(1)) {
            deliver(transaction, to: committed, on: queue, triesLeft: triesLeft - 1)
        }
    }

    #if canImport(Glibc)
    /// A non-blocking inotify descriptor told of modifications of `file`; nil when it cannot be had.
    private static func fileEvents(_ file: String) -> Int32? {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        guard inotify_add_watch(descriptor, file, UInt32(IN_MODIFY)) >= 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }
    #endif

    deinit {
        source.cancel()
    }
}

/// The last committed transaction id a watch has seen (used on its queue only).
private final class LastTransaction: @unchecked Sendable {
    private(set) var id: Int

    init(_ id: Int) {
        self.id = id
    }

    /// Whether `id` differs from the one seen last; it becomes the one seen.
    func moved(to id: Int) -> Bool {
        defer { self.id = id }
        return id != self.id
    }
}
