import SetteeCore
import SetteeJavaScript
import SetteeViews

/// The JavaScript engine's workers as the workers views run their functions on.
struct JavaScriptFunctionWorkers: FunctionWorkers {
    let pool: JavaScriptWorkerPool

    var count: Int { pool.workers.count }

    func startShared<T: Sendable>(pieces: Int, _ body: @escaping @Sendable (Int, any FunctionRunner) throws -> T) -> SharedWork<T> {
        pool.startShared(pieces: pieces) { piece, context in try body(piece, JavaScriptFunctionRunner(context: context)) }
    }

    func run<T>(_ body: (any FunctionRunner) throws -> T) throws -> T {
        try pool.nextWorker().run { context in try body(JavaScriptFunctionRunner(context: context)) }
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
