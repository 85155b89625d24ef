import Foundation
import NIOCore
import Synchronization

/// Calls off a request's work when its client goes away: the task that
/// answers it is cancelled once the client closes its side of the
/// connection (as a waiting changes feed ends then), and the database work
/// it awaits (a `_find` over many documents, a view build, JavaScript) stops
/// at its next check instead of running for nobody.
enum Disconnection {
    /// The current request of each open connection, by channel.
    private static let connections = Mutex<[ObjectIdentifier: ConnectionRequest]>([:])

    /// Runs `body` in the calling task, cancelled should the client of `channel` go before it returns.
    static func cancelling<T>(on channel: (any Channel)?, _ body: () async throws -> T) async throws -> T {
        guard let channel else { return try await body() }
        let request = current(of: channel)
        withUnsafeCurrentTask { request.start($0) }
        defer { request.stop() }
        return try await body()
    }

    /// The watch of `channel`'s requests: made at its first request and tied
    /// to the connection's end once, so a connection kept alive for a
    /// million requests registers one watch, not a million.
    private static func current(of channel: any Channel) -> ConnectionRequest {
        let key = ObjectIdentifier(channel)
        let (request, isNew) = connections.withLock { connections -> (ConnectionRequest, Bool) in
            if let known = connections[key] { return (known, false) }
            let made = ConnectionRequest()
            connections[key] = made
            return (made, true)
        }
        if isNew {
            ConnectionWatch.whenClientGone(channel) { request.clientGone() }
            channel.closeFuture.whenComplete { _ in _ = connections.withLock { $0.removeValue(forKey: key) } }
        }
        return request
    }
}

/// The task answering a connection's current request, while it answers:
/// cancelled through here from the connection's event loop when the client
/// goes; forgotten (never touched again) once the answer is made.
private final class ConnectionRequest: @unchecked Sendable {
    private let lock = NSLock()
    /// Guarded by `lock`: set only while the task runs its request.
    private var task: UnsafeCurrentTask?
    private var clientIsGone = false

    func start(_ current: UnsafeCurrentTask?) {
        lock.withLock {
            if clientIsGone { current?.cancel() } else { task = current }
        }
    }

    func stop() { lock.withLock { task = nil } }

    func clientGone() {
        lock.withLock {
            clientIsGone = true
            task?.cancel()
        }
    }
}
