
/// A failure reported by the JavaScript engine: a function that did not compile,
/// threw, ran too long or ran out of memory.
public struct JavaScriptError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// The source did not compile, or did not evaluate to a function.
        case compile
        /// The function threw.
        case runtime
        /// The call ran past its time limit and was stopped.
        case timeout
        /// The call exhausted the engine's memory limit.
        case outOfMemory
        /// The input (a document or arguments) was not JSON the engine accepts.
        case invalidInput
        /// The call was interrupted from another thread.
        case interrupted
        /// The engine itself failed.
        case `internal`
    }

    public var kind: Kind
    /// The engine's message, e.g. `TypeError: doc.x is undefined`.
    public var message: String
    /// The 1-based line in the function's source, when known.
    public var line: Int?
    /// The 1-based column in the function's source, when known.
    public var column: Int?
    /// The JavaScript stack at the point of failure, when known.
    public var stack: String
    /// The thrown value as CouchDB's couchjs shows it in its log (`errstr`:
    /// SpiderMonkey's `toSource()`), e.g. `(new String("boom"))`; empty when
    /// nothing was thrown (a timeout, a compile error).
    package var thrownSource = ""

    public init(kind: Kind, message: String, line: Int? = nil, column: Int? = nil, stack: String = "") {
        self.kind = kind
        self.message = message
        self.line = line
        self.column = column
        self.stack = stack
    }

    public var description: String {
        var text = "\(kind.label): \(message)"
        if let line {
            text += " (line \(line)" + (column.map { ", column \($0)" } ?? "") + ")"
        }
        return text
    }
}

extension JavaScriptError.Kind {
    /// Whether the engine failed rather than what it ran: an interrupted or
    /// broken engine says nothing of the function or its input, and the same
    /// call may succeed next time. Such a failure is never kept as a
    /// document's map error or a chunk's reduce error; the update fails instead.
    package var isEngineFailure: Bool { self == .interrupted || self == .internal }

    /// CouchDB's error type names where they exist.
    package var label: String {
        switch self {
        case .compile: "compilation_error"
        case .runtime: "runtime_error"
        case .timeout: "timeout"
        case .outOfMemory: "out_of_memory"
        case .invalidInput: "invalid_input"
        case .interrupted: "interrupted"
        case .internal: "internal_error"
        }
    }
}


extension JavaScriptError: SetteeError {
    /// What kind of failure this is.
    public var errorCode: SetteeErrorCode {
        switch kind {
        case .compile: .compilationError
        case .runtime: .runtimeError
        case .timeout: .timeout
        case .outOfMemory: .outOfMemory
        case .invalidInput: .badRequest
        case .interrupted: .interrupted
        case .internal: .javaScriptEngineFailure
        }
    }
}
