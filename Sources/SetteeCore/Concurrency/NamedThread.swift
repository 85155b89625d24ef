import Foundation

/// Threads of Settee's own, named as debuggers, `top -H` and crash reports show them.
package enum NamedThread {
    /// Starts a thread named `name` that runs `body`.
    ///
    /// The name is given by the thread itself once it runs: a name set on a
    /// `Thread` before it starts does not reach the system on Linux, where
    /// the new thread keeps its creator's (often Dispatch's `com.apple.root…`).
    package static func start(name: String, stackSize: Int = 8 << 20, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            Thread.current.name = name
            body()
        }
        thread.name = name
        thread.stackSize = stackSize
        thread.start()
    }

    /// The calling thread's name as the system knows it (Linux: `/proc/thread-self/comm`, at most 15 bytes).
    package static var currentSystemName: String? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) else { return nil }
        return text.trimmingCharacters(in: .newlines)
        #else
        return Thread.current.name
        #endif
    }
}
