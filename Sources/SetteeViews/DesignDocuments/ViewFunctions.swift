package import SetteeCore

/// A map or reduce function compiled by a ``FunctionRunner``: a handle that
/// is valid on the runner that compiled it.
package struct CompiledFunction: Sendable, Hashable {
    package let handle: Int32

    package init(handle: Int32) {
        self.handle = handle
    }
}

/// What runs a view's map and reduce functions on one worker thread. Views
/// know functions only through this protocol: the JavaScript engine is one
/// runner (given by the `Settee` module), and a view written in Swift can be
/// another.
package protocol FunctionRunner: AnyObject {
    /// Compiles a function from its source; `library` is the design
    /// document's `views.lib` (JSON) for `require()`. The same source compiles
    /// once per runner.
    func compile(_ source: String, name: String, library: String?) throws(JavaScriptError) -> CompiledFunction

    /// Maps one document (UTF-8 JSON) with `functions`, in order: `row` gets
    /// each emitted row (the function's position in `functions`, key and value
    /// as JSON text, valid only during the call), `failure` each function
    /// that threw (it then has no rows, as in CouchDB).
    /// - Throws: When the document itself cannot be mapped (too large or too
    ///   deep for the engine), or what `row` or `failure` throw.
    func map(_ document: UnsafeRawBufferPointer, functions: [CompiledFunction],
             row: (_ function: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void,
             failure: (_ function: Int, JavaScriptError) throws -> Void) throws

    /// Calls reduce functions as CouchDB does: `reduce(keys, values, rereduce)`,
    /// `keysJSON` a JSON array of `[key, docid]` pairs (`null` on rereduce).
    func reduce(_ functions: [CompiledFunction], keysJSON: String, valuesJSON: String, rereduce: Bool) throws(JavaScriptError) -> CallResult
}

extension FunctionRunner {
    /// Compiles a function that uses no library.
    package func compile(_ source: String, name: String) throws(JavaScriptError) -> CompiledFunction {
        try compile(source, name: name, library: nil)
    }
}

/// The worker threads view functions run on, each with its own
/// ``FunctionRunner``.
package protocol FunctionWorkers: Sendable {
    /// How many workers there are.
    var count: Int { get }

    /// Runs `body` for each of `pieces` pieces of work, every worker taking the
    /// next piece as it finishes one, without waiting for them. Work started
    /// later queues behind it on each worker. A single piece goes to one
    /// worker alone.
    func startShared<T: Sendable>(pieces: Int, _ body: @escaping @Sendable (_ piece: Int, any FunctionRunner) throws -> T) -> SharedWork<T>

    /// Runs `body` on the worker whose turn it is (round-robin) and waits for it.
    func run<T>(_ body: (any FunctionRunner) throws -> T) throws -> T
}

extension FunctionWorkers {
    /// ``startShared(pieces:_:)``, waiting for the results (in piece order).
    package func runShared<T: Sendable>(pieces: Int, _ body: @escaping @Sendable (_ piece: Int, any FunctionRunner) throws -> T) throws -> [T] {
        try startShared(pieces: pieces, body).wait()
    }
}
