import Foundation

/// Threads that may run blocking work (LMDB reads and writes, index builds,
/// JavaScript) where it is called, without handing it to another thread.
///
/// Settee's async calls hand their work to threads of Settee's own
/// (``ElasticThreadPool``), because the caller is usually on one of Swift's
/// cooperative threads, which must not block. A program that runs its tasks
/// on threads of its own (a server's request threads, as a `TaskExecutor`)
/// can mark them: the async calls its tasks make there run on the calling
/// thread, saving two thread switches per call, inside the host's
/// ``BlockingWorkHost/runBlocking(_:)``, so that the host can see a long call
/// and start another thread for its other tasks while it holds this one.
package protocol BlockingWorkHost: AnyObject, Sendable {
    /// Runs `body`, which may block for long, on the calling thread (one of the host's).
    func runBlocking<T>(_ body: () throws -> T) rethrows -> T
}

/// The ``BlockingWorkHost`` of the calling thread, if it has one.
package enum BlockingWork {
    /// The host of a thread, boxed: a thread-specific value is a plain pointer.
    private final class Box {
        let host: any BlockingWorkHost
        init(_ host: any BlockingWorkHost) { self.host = host }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
        }
        return key
    }()

    /// Makes `host` the calling thread's host, for the rest of the thread's life.
    package static func setHost(_ host: any BlockingWorkHost) {
        if let old = pthread_getspecific(key) { Unmanaged<AnyObject>.fromOpaque(old).release() }
        pthread_setspecific(key, Unmanaged.passRetained(Box(host) as AnyObject).toOpaque())
    }

    /// The calling thread's host; `nil` on threads nobody marked (Swift's
    /// cooperative threads, Dispatch's, a program's main thread).
    package static var currentHost: (any BlockingWorkHost)? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<Box>.fromOpaque(pointer).takeUnretainedValue().host
    }

    /// Runs `body`, which may keep the thread for long (a password hash, a
    /// large parse), where the calling thread's host can see it: on a host's
    /// thread inside ``BlockingWorkHost/runBlocking(_:)``, elsewhere as it is.
    package static func run<T>(_ body: () throws -> T) rethrows -> T {
        if let host = currentHost { return try host.runBlocking(body) }
        return try body()
    }
}
