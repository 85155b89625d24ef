import SetteeCore
/// Limits and settings for the JavaScript engine's workers.
public struct JavaScriptConfiguration: Sendable, Equatable {
    /// The longest one function call may run before it is stopped (CouchDB's
    /// `os_process_timeout` is 5 s).
    public var timeout: Duration = .seconds(5)
    /// The bound on each context's garbage-collected heap.
    public var heapLimitBytes: Int = 256 << 20
    /// The most memory one function call may take. The heap limit alone
    /// misses what the engine allocates outside its heap — array elements,
    /// string characters, typed arrays — so the process's resident memory
    /// (anonymous pages: LMDB's memory map does not count) is watched every
    /// few milliseconds (on Linux). When it has grown by more than this during
    /// a call, the call measures what its engine holds (heap, what that
    /// allocates, the rows it emitted): past this bound even after a
    /// collection, the call is stopped with
    /// ``JavaScriptError/Kind-swift.enum/outOfMemory`` and the freed pages are
    /// returned to the system; under it, the growth was the rest of the
    /// process's (other threads, other calls) and the call goes on. `0` turns
    /// the bound off.
    public var memoryLimitBytes: Int = 512 << 20
    /// The most memory a context's functions may keep between calls, in
    /// global variables: its garbage-collected heap and what that allocates
    /// outside it, measured after a collection. A call that leaves more fails
    /// with ``JavaScriptError/Kind-swift.enum/outOfMemory`` and the context's
    /// globals are cleared (its functions are compiled again, under the same
    /// handles), so the calls after it run. Measured each time the process has
    /// grown by 32 MiB; `0` turns the bound off. Not applied to the query
    /// server, whose state CouchDB manages.
    public var keptMemoryLimitBytes: Int = 128 << 20
    /// Each worker thread's stack; the engine may use three quarters of it, so
    /// deep recursion is an error ("too much recursion"), not a crash.
    public var threadStackBytes: Int = 16 << 20
    /// Whether `eval` and `new Function` may run. CouchDB blocks them.
    public var allowsCodeGeneration: Bool = false
    /// The most JSON text one map function may emit for one document (keys and
    /// values together). A function past it fails for that document with a
    /// ``JavaScriptError/Kind-swift.enum/runtime`` error, and its rows are
    /// dropped, so one document emitting millions of rows cannot exhaust
    /// memory before any other bound applies; `0` turns the bound off.
    public var emitLimitBytes: Int = 64 << 20

    public init() {}

    package var timeoutMilliseconds: UInt32 {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return UInt32(clamping: max(milliseconds, 1))
    }
}
