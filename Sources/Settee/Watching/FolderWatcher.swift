import Foundation
import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews
#if canImport(Glibc)
import Glibc
#endif

/// Tells when the files of a folder may have changed.
///
/// On Linux it listens to inotify for files written and closed, moved in or
/// out, and deleted: an edit is seen as soon as the editor has closed the file
/// (or renamed its temporary copy over it), with no polling. Elsewhere it
/// wakes once a second; the caller compares contents either way, so a wake-up
/// without a real change costs one read of each file.
final class FolderWatcher: @unchecked Sendable {
    /// One element per burst of changes (bursts coalesce while nobody reads).
    let events: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let source: any DispatchSourceProtocol
    private let queue: DispatchQueue

    init(folder: URL) throws(DesignDocumentError) {
        (events, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let continuation = continuation
        let queue = DispatchQueue(label: "settee.folder-watcher")
        self.queue = queue
        #if canImport(Glibc)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else {
            throw DesignDocumentError(file: folder.path, reason: "cannot watch the folder: \(String(cString: strerror(errno)))")
        }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
        guard inotify_add_watch(descriptor, folder.path, mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw DesignDocumentError(file: folder.path, reason: "cannot watch the folder: \(reason)")
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler {
            // Drain the queued events; which files changed is worked out by comparing contents.
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
            continuation.yield()
        }
        source.setCancelHandler { close(descriptor) }
        #else
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + 1, repeating: 1)
        source.setEventHandler { continuation.yield() }
        #endif
        self.source = source
        source.resume()
    }

    /// Sends an event after `delay`, as if the folder had changed: what
    /// waits for time to pass (a deleted file's removal delay) is looked at then.
    func wake(after delay: Duration) {
        let continuation = continuation
        // A few milliseconds late rather than early: the delay has then surely passed.
        let nanoseconds = Int(delay / .nanoseconds(1)) + 5_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { continuation.yield() }
    }

    deinit {
        source.cancel()
        continuation.finish()
    }
}
