import Foundation
import SetteeCore

/// Runs one job at a time on a thread of its own, so that the caller can work
/// on one batch while the job reads the next or writes the last. The caller
/// must ``wait()`` for a job before starting the next.
package final class BackgroundJob<Output>: @unchecked Sendable {
    private let queue: DispatchQueue
    private let done = DispatchSemaphore(value: 0)
    private var outcome: Result<Output, any Error>?
    package private(set) var isBusy = false

    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Starts `job`; the previous one must have been waited for.
    package func start(_ job: @escaping @Sendable () throws -> Output) {
        precondition(!isBusy, "a background job is still under way")
        isBusy = true
        queue.async {
            self.outcome = Result { try job() }
            self.done.signal()
        }
    }

    /// Waits for the job under way and returns what it returned (or throws what it threw).
    package func wait() throws -> Output {
        precondition(isBusy, "no background job under way")
        done.wait()
        isBusy = false
        defer { outcome = nil }
        return try outcome!.get()
    }
}
