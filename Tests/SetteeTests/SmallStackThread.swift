import Foundation

/// Runs `body` on a fresh thread with a 512 KiB stack (the size of secondary
/// threads on macOS) and returns its result; deep-nesting tests use it to show
/// that parsing and scanning do not grow the stack with the input's depth.
func onSmallStack<Result: Sendable>(_ body: @escaping @Sendable () -> Result) -> Result {
    let box = SmallStackResult<Result>()
    let finished = DispatchSemaphore(value: 0)
    let thread = Thread {
        box.value = body()
        finished.signal()
    }
    thread.stackSize = 512 * 1024
    thread.start()
    finished.wait()
    return box.value!
}

/// Carries the result back from the thread; written before the semaphore is
/// signalled and read after the wait, so never concurrently.
private final class SmallStackResult<Value>: @unchecked Sendable {
    var value: Value?
}
