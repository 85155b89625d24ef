import CSetteeJS
import Foundation
public import SetteeCore
import CSetteeZlib

/// A long-lived thread that owns one SpiderMonkey context.
///
/// A context can only be used from the thread that created it, and neither a
/// Swift actor nor a dispatch queue pins a thread, so each worker runs its own.
/// Work is handed over as closures that receive the worker's ``JavaScriptContext``.
public final class JavaScriptWorker: @unchecked Sendable {
    public let configuration: JavaScriptConfiguration

    private let condition = NSCondition()
    // Guarded by `condition`:
    private var jobs: [(JavaScriptContext) -> Void] = []
    private var stopping = false
    private var finished = false
    private var startup: Result<OpaquePointer, JavaScriptError>?

    private var thread = pthread_t()
    /// Set once before `init` returns; used only to interrupt from other threads.
    private var rawContext: OpaquePointer?

    /// Starts the worker's thread and creates its context (about 17 ms).
    public init(configuration: JavaScriptConfiguration = JavaScriptConfiguration()) throws(JavaScriptError) {
        self.configuration = configuration
        try JavaScriptEngine.start()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, configuration.threadStackBytes)
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        let created = pthread_create(&thread, &attributes, { argument in
            let worker = Unmanaged<JavaScriptWorker>.fromOpaque(argument!).takeUnretainedValue()
            worker.threadMain()
            return nil
        }, unmanaged)
        guard created == 0 else {
            throw JavaScriptError(kind: .internal, message: "could not start a JavaScript worker thread (error \(created))")
        }
        condition.lock()
        while startup == nil { condition.wait() }
        let outcome = startup!
        condition.unlock()
        switch outcome {
        case .success(let raw):
            rawContext = raw
            JavaScriptEngine.register(self)
        case .failure(let error):
            pthread_join(thread, nil)
            throw error
        }
    }

    deinit {
        stop()
        JavaScriptEngine.unregister(self)
    }

    /// Runs `body` on the worker's thread and waits for its result.
    public func run<T>(_ body: (JavaScriptContext) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            let call = SynchronousCall(body)
            enqueue { context in call.perform(context) }
            return try call.wait()
        }
    }

    /// Runs `body` on the worker's thread without blocking the caller's thread.
    public func run<T: Sendable>(_ body: @escaping @Sendable (JavaScriptContext) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            enqueue { context in
                continuation.resume(with: Result { try body(context) })
            }
        }
    }

    /// Queues `job` on the worker's thread and returns at once.
    package func submit(_ job: @escaping @Sendable (JavaScriptContext) -> Void) {
        enqueue(job)
    }

    /// Stops the call running on this worker or, when none is, the next one
    /// to run: it fails with ``JavaScriptError/Kind-swift.enum/interrupted``.
    /// An index update whose call is stopped fails with that error (no
    /// document is skipped for it). Safe from any thread.
    public func interrupt() {
        if let rawContext { settee_js_context_interrupt(rawContext) }
    }

    /// Finishes queued work, destroys the context on its own thread and ends the thread.
    package func stop() {
        condition.lock()
        if finished || startup == nil {
            condition.unlock()
            return
        }
        stopping = true
        condition.broadcast()
        condition.unlock()
        pthread_join(thread, nil)
        condition.lock()
        finished = true
        condition.unlock()
    }

    private func enqueue(_ job: @escaping (JavaScriptContext) -> Void) {
        condition.lock()
        precondition(!stopping, "The JavaScript worker was used after it stopped.")
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func threadMain() {
        let context: JavaScriptContext
        do {
            context = try JavaScriptContext(configuration: configuration)
        } catch {
            condition.lock()
            startup = .failure(error)
            condition.broadcast()
            condition.unlock()
            return
        }
        condition.lock()
        startup = .success(context.raw)
        condition.broadcast()
        while true {
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty { break }
            let job = jobs.removeFirst()
            condition.unlock()
            job(context)
            condition.lock()
        }
        condition.unlock()
        context.destroy()
    }
}

/// A caller's closure run on the worker's thread while the caller waits. The
/// closure is dropped before the caller wakes, so it never outlives the call.
private final class SynchronousCall<T>: @unchecked Sendable {
    private var body: ((JavaScriptContext) throws -> T)?
    private var result: Result<T, any Error>?
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping (JavaScriptContext) throws -> T) {
        self.body = body
    }

    func perform(_ context: JavaScriptContext) {
        result = Result { try body!(context) }
        body = nil
        done.signal()
    }

    func wait() throws -> T {
        done.wait()
        return try result!.get()
    }
}
