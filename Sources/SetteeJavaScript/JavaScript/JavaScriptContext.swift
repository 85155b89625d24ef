import CSetteeJS
public import SetteeCore

/// A compiled JavaScript function, valid in the context that compiled it.
public struct JavaScriptFunction: Sendable, Hashable {
    package let handle: Int32

    package init(handle: Int32) {
        self.handle = handle
    }
}

/// One SpiderMonkey context. It belongs to the worker thread that created it:
/// only code running on that ``JavaScriptWorker`` may use it.
public final class JavaScriptContext {
    package let raw: OpaquePointer
    private var compiled: [CompileKey: Result<JavaScriptFunction, JavaScriptError>] = [:]
    private var error = settee_js_error()

    private struct CompileKey: Hashable {
        var source: String
        var library: String?
    }

    package init(configuration: JavaScriptConfiguration) throws(JavaScriptError) {
        var options = settee_js_context_options(
            gc_heap_limit_bytes: UInt64(configuration.heapLimitBytes),
            native_stack_quota_bytes: UInt64(configuration.threadStackBytes - configuration.threadStackBytes / 4),
            timeout_milliseconds: configuration.timeoutMilliseconds,
            memory_limit_bytes: UInt64(max(configuration.memoryLimitBytes, 0)),
            kept_memory_limit_bytes: UInt64(max(configuration.keptMemoryLimitBytes, 0)),
            emit_limit_bytes: UInt64(max(configuration.emitLimitBytes, 0)),
            allow_code_generation: configuration.allowsCodeGeneration)
        var error = settee_js_error()
        guard let raw = settee_js_context_create(&options, &error) else {
            throw JavaScriptError(error)
        }
        self.raw = raw
    }

    /// Stops the call running on this context, or the next one to run: it
    /// fails with ``JavaScriptError/Kind-swift.enum/interrupted``. Safe from any thread.
    package func interrupt() {
        settee_js_context_interrupt(raw)
    }

    /// Forgets an ``interrupt()`` that came after the last call ended, so
    /// that it does not stop the next one. On the context's thread, between calls.
    package func clearInterrupt() {
        settee_js_context_clear_interrupt(raw)
    }

    package func destroy() {
        settee_js_context_destroy(raw)
    }

    /// Compiles CouchDB-style function source (`function (doc) { … }`), once:
    /// the same source (and library) returns the same function, or the same
    /// error when the source itself is at fault.
    ///
    /// Each function runs in a realm of its own, with its own global object and
    /// built-ins: what one function changes (a global variable,
    /// `String.prototype`, `JSON.stringify`) no other function sees, whatever
    /// design document it comes from. Documents reach it frozen, and the
    /// built-ins behind their objects are frozen too.
    ///
    /// - Parameters:
    ///   - source: The function's source. A trailing `;` and comments are tolerated.
    ///   - name: Shown as the file name in errors and stacks.
    ///   - library: CommonJS modules for `require`, as JSON shaped like the design
    ///     document (`{"views":{"lib":{…}}}`); `nil` when `require` is not available.
    ///   - reused: Whether an earlier compile of the same source may be returned;
    ///     `false` gives a new function in a new realm, which the caller releases
    ///     with ``release(_:)``.
    public func compile(_ source: String, name: String = "function", library: String? = nil, reused: Bool = true) throws(JavaScriptError) -> JavaScriptFunction {
        let key = CompileKey(source: source, library: library)
        if reused, let known = compiled[key] { return try known.get() }
        let handle = source.utf8.withContiguousStorageIfAvailable { sourceBytes in
            compile(sourceBytes, name: name, library: library)
        } ?? {
            var copy = source
            copy.makeContiguousUTF8()
            return copy.utf8.withContiguousStorageIfAvailable { compile($0, name: name, library: library) }!
        }()
        let result: Result<JavaScriptFunction, JavaScriptError> = handle >= 0
            ? .success(JavaScriptFunction(handle: handle)) : .failure(JavaScriptError(error))
        if !reused { return try result.get() }
        // A failure of the source is the same every time; one of the call
        // (interrupted, out of time or memory) may not be.
        if case .failure(let failure) = result, failure.kind != .compile {
            return try result.get()
        }
        compiled[key] = result
        return try result.get()
    }

    private func compile(_ source: UnsafeBufferPointer<UInt8>, name: String, library: String?) -> Int32 {
        source.withMemoryRebound(to: CChar.self) { source in
            if let library {
                return library.withCString { libraryPointer in
                    settee_js_compile(raw, source.baseAddress, source.count, name, libraryPointer, library.utf8.count, &error)
                }
            }
            return settee_js_compile(raw, source.baseAddress, source.count, name, nil, 0, &error)
        }
    }

    /// Releases a function compiled with `reused: false`, and its realm.
    public func release(_ function: JavaScriptFunction) {
        settee_js_release(raw, function.handle)
    }

    /// Runs map functions on one document (UTF-8 JSON), parsed once and frozen.
    ///
    /// The output is read in place: it is valid only until the next call on this context.
    /// - Throws: When the document itself could not be parsed; a function that
    ///   throws is reported in the output instead.
    package func map(_ document: UnsafeRawBufferPointer, functions: [JavaScriptFunction]) throws(JavaScriptError) -> MapOutput {
        try functions.withUnsafeBufferPointer { functions throws(JavaScriptError) in
            try functions.withMemoryRebound(to: Int32.self) { handles throws(JavaScriptError) in try map(document, handles: handles) }
        }
    }

    /// ``map(_:functions:)`` with the functions given by their handles.
    package func map(_ document: UnsafeRawBufferPointer, handles: UnsafeBufferPointer<Int32>) throws(JavaScriptError) -> MapOutput {
        var output = settee_js_output()
        let status = settee_js_map_document(
            raw, handles.baseAddress, handles.count,
            document.baseAddress?.assumingMemoryBound(to: CChar.self), document.count,
            &output, &error)
        guard status == SETTEE_JS_OK else { throw JavaScriptError(error) }
        return MapOutput(bytes: UnsafeRawBufferPointer(start: output.bytes, count: output.length), functionCount: handles.count)
    }

    /// Runs map functions on one document and copies what they produced.
    public func map(_ document: String, functions: [JavaScriptFunction]) throws(JavaScriptError) -> DocumentMapResult {
        var document = document
        document.makeContiguousUTF8()
        let outcome: Result<DocumentMapResult, JavaScriptError> = document.utf8.withContiguousStorageIfAvailable { bytes in
            Result { () throws(JavaScriptError) in try map(UnsafeRawBufferPointer(bytes), functions: functions).copied() }
        }!
        return try outcome.get()
    }

    /// Calls each function with the same arguments (a JSON array, parsed once) and
    /// returns each one's result as JSON text, or its error.
    public func call(_ functions: [JavaScriptFunction], argumentsJSON: String) throws(JavaScriptError) -> CallResult {
        var arguments = argumentsJSON
        arguments.makeContiguousUTF8()
        var output = settee_js_output()
        let status = arguments.utf8.withContiguousStorageIfAvailable { argumentBytes in
            functions.withUnsafeBufferPointer { functions in
                functions.withMemoryRebound(to: Int32.self) { handles in
                    argumentBytes.withMemoryRebound(to: CChar.self) { argumentBytes in
                        settee_js_call(raw, handles.baseAddress, handles.count, argumentBytes.baseAddress, argumentBytes.count, &output, &error)
                    }
                }
            }
        }!
        guard status == SETTEE_JS_OK else { throw JavaScriptError(error) }
        var reader = OutputReader(bytes: UnsafeRawBufferPointer(start: output.bytes, count: output.length))
        var results: [Result<String, JavaScriptError>] = []
        results.reserveCapacity(functions.count)
        for _ in functions {
            let status = reader.u32()
            if status == 0 {
                results.append(.success(reader.string()))
            } else {
                results.append(.failure(reader.failure(status: status)))
            }
        }
        return CallResult(results: results, logs: reader.logs())
    }

    /// Calls a reduce function as CouchDB does: `reduce(keys, values, rereduce)`.
    ///
    /// - Parameters:
    ///   - keysJSON: A JSON array of `[key, docid]` pairs, or `null` on rereduce.
    ///   - valuesJSON: A JSON array of the values (or of earlier reductions on rereduce).
    public func reduce(_ functions: [JavaScriptFunction], keysJSON: String, valuesJSON: String, rereduce: Bool) throws(JavaScriptError) -> CallResult {
        try call(functions, argumentsJSON: "[\(rereduce ? "null" : keysJSON),\(valuesJSON),\(rereduce)]")
    }

    /// Runs a full garbage collection.
    public func collectGarbage() {
        settee_js_context_collect_garbage(raw)
    }
}

/// A row passed to `emit(key, value)`, as JSON text.
public struct EmittedRow: Sendable, Equatable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// What the map functions produced for one document, copied out of the engine.
public struct DocumentMapResult: Sendable {
    /// Per function: its rows, or the error it threw (and then no rows, as CouchDB).
    public var outcomes: [Result<[EmittedRow], JavaScriptError>]
    /// Messages passed to `log()`.
    public var logs: [String]
}

/// What the map functions produced for one document, read in place from the
/// engine's buffer: valid only until the next call on the context.
package struct MapOutput {
    package let bytes: UnsafeRawBufferPointer
    package let functionCount: Int

    /// Visits each function's outcome in order: rows as raw JSON text, or an error.
    package func forEach(
        rows: (_ function: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void,
        failure: (_ function: Int, JavaScriptError) throws -> Void
    ) rethrows -> [String] {
        var reader = OutputReader(bytes: bytes)
        for function in 0..<functionCount {
            let status = reader.u32()
            if status != 0 {
                try failure(function, reader.failure(status: status))
                continue
            }
            let count = reader.u32()
            for _ in 0..<count {
                let key = reader.slice()
                let value = reader.slice()
                try rows(function, key, value)
            }
        }
        return reader.logs()
    }

    /// Copies the outcome into Swift values.
    package func copied() -> DocumentMapResult {
        var outcomes: [Result<[EmittedRow], JavaScriptError>] = Array(repeating: .success([]), count: functionCount)
        var rowsByFunction: [[EmittedRow]] = Array(repeating: [], count: functionCount)
        let logs = forEach(
            rows: { function, key, value in
                rowsByFunction[function].append(
                    EmittedRow(key: String(decoding: key, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
            },
            failure: { function, error in outcomes[function] = .failure(error) })
        for function in 0..<functionCount {
            if case .success = outcomes[function] { outcomes[function] = .success(rowsByFunction[function]) }
        }
        return DocumentMapResult(outcomes: outcomes, logs: logs)
    }
}

/// Reads the shim's output layout (see settee_js.h).
package struct OutputReader {
    package let bytes: UnsafeRawBufferPointer
    package var offset = 0

    package init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    package mutating func u32() -> UInt32 {
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        offset += 4
        return value
    }

    package mutating func slice() -> UnsafeRawBufferPointer {
        let length = Int(u32())
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
    }

    package mutating func string() -> String {
        String(decoding: slice(), as: UTF8.self)
    }

    package mutating func failure(status: UInt32) -> JavaScriptError {
        let line = Int(u32())
        let column = Int(u32())
        let message = string()
        let stack = string()
        var error = JavaScriptError(
            kind: .init(status: status), message: message,
            line: line > 0 ? line : nil, column: column > 0 ? column : nil, stack: stack)
        error.thrownSource = string()
        return error
    }

    package mutating func logs() -> [String] {
        let count = u32()
        return (0..<count).map { _ in string() }
    }
}
