import Foundation

/// Whether the work a thread is doing for a caller has been called off: the
/// bridge between a cancelled Swift `Task` and the blocking code that works
/// for it on another thread.
///
/// The thread that does the work makes it ``current`` for the time it works
/// (``makeCurrent(_:)``); code deeper down, which has no task to ask, checks
/// ``current`` where stopping is safe (between batches, before a function
/// call) and registers what stops it sooner while it runs
/// (``whileRunning(onCancel:_:)``: interrupting running JavaScript).
package final class Cancellation: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false
    private var handlers: [Int: @Sendable () -> Void] = [:]
    private var nextHandler = 0

    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool {
        lock.withLock { cancelled }
    }

    /// Calls the work off: handlers registered now run (once), and
    /// ``checkCancelled()`` throws from now on.
    package func cancel() {
        lock.withLock {
            guard !cancelled else { return }
            cancelled = true
            for handler in handlers.values { handler() }
        }
    }

    /// Throws `CancellationError` once the work is called off.
    package func checkCancelled() throws(CancellationError) {
        if isCancelled { throw CancellationError() }
    }

    /// Runs `body`, with `onCancel` called should the work be called off
    /// while it runs (at once when it already is). `onCancel` is never
    /// called after `body` returns.
    package func whileRunning<T>(onCancel: @escaping @Sendable () -> Void, _ body: () throws -> T) rethrows -> T {
        let registration: Int? = lock.withLock {
            if cancelled {
                onCancel()
                return nil
            }
            nextHandler += 1
            handlers[nextHandler] = onCancel
            return nextHandler
        }
        defer { if let registration { lock.withLock { _ = handlers.removeValue(forKey: registration) } } }
        return try body()
    }

    // MARK: The current thread's

    /// The cancellation of the work the calling thread is doing, if it was
    /// made current (``makeCurrent(_:)``).
    package static var current: Cancellation? {
        guard let pointer = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<Cancellation>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Runs `body` with this cancellation as the calling thread's ``current``.
    package func makeCurrent<T>(_ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(currentKey)
        pthread_setspecific(currentKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(currentKey, previous) }
        return try withExtendedLifetime(self) { try body() }
    }
}

/// The thread-specific slot of ``Cancellation/current``.
private let currentKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// The check a long loop makes for its thread's ``Cancellation/current``:
/// every so many steps, so that a scan over millions of documents stops
/// soon after its caller goes away, at the cost of a counter per step.
package struct CancellationCheck {
    private let cancellation = Cancellation.current
    private var steps: UInt32 = 0

    package init() {}

    /// Counts a step; throws `CancellationError` once the work is called off.
    package mutating func step() throws(CancellationError) {
        steps &+= 1
        if steps & 63 == 0, let cancellation { try cancellation.checkCancelled() }
    }
}
