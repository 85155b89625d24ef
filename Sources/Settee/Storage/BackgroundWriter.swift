import Foundation

/// Runs one job at a time on a thread of its own, so that the caller can
/// prepare the next batch while this one is written. The caller must
/// ``wait()`` for a job before starting the next.
final class BackgroundWriter<Output>: @unchecked Sendable {
    private let queue: DispatchQueue
    private let done = DispatchSemaphore(value: 0)
    private var outcome: Result<Output, any Error>?
    private(set) var isBusy = false

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Starts `job`; the previous one must have been waited for.
    func start(_ job: @escaping @Sendable () throws -> Output) {
        precondition(!isBusy, "a background write is still under way")
        isBusy = true
        queue.async {
            self.outcome = Result { try job() }
            self.done.signal()
        }
    }

    /// Waits for the job under way and returns what it returned (or throws what it threw).
    func wait() throws -> Output {
        precondition(isBusy, "no background write under way")
        done.wait()
        isBusy = false
        defer { outcome = nil }
        return try outcome!.get()
    }
}
