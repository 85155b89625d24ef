import Foundation
import NIOCore

/// Calls off a request's work when its client goes away: the task that
/// answers it is cancelled once the connection closes, and the database
/// work it awaits (a `_find` over many documents, a view build, JavaScript)
/// stops at its next check instead of running for nobody.
enum Disconnection {
    /// Runs `body` in the calling task, cancelled should `channel` close before it returns.
    static func cancelling<T>(on channel: (any Channel)?, _ body: () async throws -> T) async throws -> T {
        guard let channel else { return try await body() }
        let watch = TaskWatch()
        withUnsafeCurrentTask { watch.start($0) }
        defer { watch.stop() }
        ConnectionWatch.whenClientGone(channel) { watch.cancel() }
        return try await body()
    }
}

/// The task answering a request, while it answers: cancelled through here
/// from the connection's event loop; forgotten (never touched again) once
/// the answer is made.
private final class TaskWatch: @unchecked Sendable {
    private let lock = NSLock()
    /// Guarded by `lock`: set only while the task runs `body`.
    private var task: UnsafeCurrentTask?

    func start(_ current: UnsafeCurrentTask?) { lock.withLock { task = current } }

    func stop() { lock.withLock { task = nil } }

    func cancel() { lock.withLock { task?.cancel() } }
}
