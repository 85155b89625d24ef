package import Foundation

/// Pieces of work that worker threads are taking, each one the next piece
/// as it finishes one; their results come back in piece order.
package final class SharedWork<T: Sendable>: Sendable {
    package let results: ResultSlots<T>
    package let done = DispatchGroup()

    package init(count: Int) {
        results = ResultSlots(count: count)
    }

    /// Waits for every piece and returns their results in piece order (or
    /// throws the first piece's error).
    package func wait() throws -> [T] {
        done.wait()
        return try results.values()
    }
}

/// Results written by several threads, one slot each.
package final class ResultSlots<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]

    package init(count: Int) {
        slots = Array(repeating: nil, count: count)
    }

    package func set(_ index: Int, _ result: Result<T, any Error>) {
        lock.lock()
        slots[index] = result
        lock.unlock()
    }

    package func values() throws -> [T] {
        lock.lock()
        defer { lock.unlock() }
        return try slots.map { try $0!.get() }
    }
}
