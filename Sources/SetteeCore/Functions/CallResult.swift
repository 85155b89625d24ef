/// The results of calling functions with the same arguments (a JavaScript
/// context's `call` and `reduce`).
public struct CallResult: Sendable {
    /// Per function, its result as JSON text (`null` for `undefined`) or its error.
    public var results: [Result<String, JavaScriptError>]
    /// Messages passed to `log()` during the calls.
    public var logs: [String]

    package init(results: [Result<String, JavaScriptError>], logs: [String]) {
        self.results = results
        self.logs = logs
    }
}
