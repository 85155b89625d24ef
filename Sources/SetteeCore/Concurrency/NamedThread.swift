import Foundation

/// Threads of Settee's own, named as debuggers, `top -H` and crash reports show them.
package enum NamedThread {
    /// Starts a thread named `name` that runs `body`.
    ///
    /// The name is given by the thread itself once it runs, before `body`: a
    /// name set on a `Thread` before it starts does not reliably reach the
    /// system on Linux, where the new thread keeps its creator's (often
    /// Dispatch's `com.apple.root…`).
    package static func start(name: String, stackSize: Int = 8 << 20, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            setCurrentSystemName(name)
            body()
        }
        thread.name = name
        thread.stackSize = stackSize
        thread.start()
    }

    /// Names the calling thread as the system knows it (Linux: at most 15
    /// bytes, written to `/proc/thread-self/comm`, as `pthread_setname_np` does).
    private static func setCurrentSystemName(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        #else
        Thread.current.name = name
        #endif
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
