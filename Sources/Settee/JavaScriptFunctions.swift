import SetteeCore
import SetteeJavaScript
import SetteeViews

/// The JavaScript engine's workers as the workers views run their functions on.
///
/// Work done for a caller that can call it off (an async query or index
/// update whose task is cancelled: ``Cancellation``) starts no function once
/// it is called off, and the functions running then are interrupted; either
/// way the work throws, and the caller's update stops there.
struct JavaScriptFunctionWorkers: FunctionWorkers {
    let pool: JavaScriptWorkerPool
    /// The caller's cancellation, if it has one.
    var cancellation: Cancellation?

    var count: Int { pool.workers.count }

    func startShared<T: Sendable>(pieces: Int, _ body: @escaping @Sendable (Int, any FunctionRunner) throws -> T) -> SharedWork<T> {
        pool.startShared(pieces: pieces) { [cancellation] piece, context in
            try Self.run(on: context, cancellation: cancellation) { try body(piece, JavaScriptFunctionRunner(context: context)) }
        }
    }

    func run<T>(_ body: (any FunctionRunner) throws -> T) throws -> T {
        try pool.nextWorker().run { context in
            try Self.run(on: context, cancellation: cancellation) { try body(JavaScriptFunctionRunner(context: context)) }
        }
    }

    /// Runs `body` on a worker's context, interrupting its JavaScript should
    /// `cancellation` call the work off meanwhile.
    private static func run<T>(on context: JavaScriptContext, cancellation: Cancellation?, _ body: () throws -> T) throws -> T {
        guard let cancellation else { return try body() }
        try cancellation.checkCancelled()
        nonisolated(unsafe) let interrupted = context
        defer {
            // An interrupt that came after the last call ended would stop the next caller's call.
            if cancellation.isCancelled { context.clearInterrupt() }
        }
        do {
            return try cancellation.whileRunning(onCancel: { interrupted.interrupt() }, body)
        } catch where cancellation.isCancelled {
            throw CancellationError()
        }
    }
}

/// A worker's JavaScript context as the runner of view functions.
final class JavaScriptFunctionRunner: FunctionRunner {
    let context: JavaScriptContext

    init(context: JavaScriptContext) {
        self.context = context
    }

    func compile(_ source: String, name: String, library: String?) throws(JavaScriptError) -> CompiledFunction {
        CompiledFunction(handle: try context.compile(source, name: name, library: library).handle)
    }

    func map(_ document: UnsafeRawBufferPointer, functions: [CompiledFunction],
             row: (Int, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void,
             failure: (Int, JavaScriptError) throws -> Void) throws {
        let output = try functions.withUnsafeBufferPointer { functions throws(JavaScriptError) in
            try functions.withMemoryRebound(to: Int32.self) { handles throws(JavaScriptError) in try context.map(document, handles: handles) }
        }
        _ = try output.forEach(rows: row, failure: failure)
    }

    func reduce(_ functions: [CompiledFunction], keysJSON: String, valuesJSON: String, rereduce: Bool) throws(JavaScriptError) -> CallResult {
        try context.reduce(functions.map { JavaScriptFunction(handle: $0.handle) }, keysJSON: keysJSON, valuesJSON: valuesJSON, rereduce: rereduce)
    }
}
