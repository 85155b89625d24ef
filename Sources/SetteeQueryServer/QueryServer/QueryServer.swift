import CSetteeJS
public import Logging
public import SetteeCore
public import SetteeJavaScript

/// Apache CouchDB's JavaScript query server, on Settee's engine: the line
/// protocol CouchDB speaks to `couchjs` (one JSON array per line in, one JSON
/// value per line out).
///
/// `reset`, `add_fun`, `add_lib`, `map_doc`, `reduce` and `rereduce` run
/// natively on the context's compiled functions (reduce functions are compiled
/// once per source), as do the search plugins' `index_doc` and
/// `nouveau_index_doc`; `ddoc` (design documents' shows, lists, updates, filters,
/// views used as filters, `validate_doc_update` and rewrites) runs in a
/// JavaScript runtime installed into the context.
///
/// Errors are answered as `["error", type, reason]`. A fatal error (an unknown
/// command, a function throwing `["fatal", …]`, a list reading something other
/// than a row) is answered the same way and ends ``run()`` with status 255, as
/// `couchjs` exits.
///
/// A server takes over its context for good (its `log` writes protocol lines):
/// create it, and call it, on the context's ``JavaScriptWorker`` thread only.
///
/// ```swift
/// let worker = try JavaScriptWorker()
/// let status = try worker.run { context in
///     try QueryServer(context: context, transport: FileDescriptorTransport()).run()
/// }
/// ```
public final class QueryServer {
    private let context: JavaScriptContext
    private let transport: any QueryServerTransport
    private let logger: Logger
    private let designDocumentRunner: JavaScriptFunction
    private var mapFunctions: [JavaScriptFunction] = []
    /// The `add_lib` object as JSON text: map functions' `views.lib`.
    private var library = "null"
    private var reduceLimit = ReduceLimit()
    /// Which search plugin `index()` serves now ("dreyfus" until told otherwise).
    private var indexMode = "map"
    private let indexModeSetter: JavaScriptFunction
    private var response: [UInt8] = []

    /// Installs the query-server runtime into `context`.
    ///
    /// - Parameters:
    ///   - context: The context to serve from; it serves nothing else afterwards.
    ///   - transport: Where commands come from and answers go.
    ///   - logger: Receives fatal errors (the protocol's own `log` lines go to `transport`).
    public init(context: JavaScriptContext, transport: any QueryServerTransport, logger: Logger = Logger(label: "settee.couchjs")) throws(JavaScriptError) {
        self.context = context
        self.transport = transport
        self.logger = logger
        var host = settee_js_host(
            info: Unmanaged.passUnretained(transport as AnyObject).toOpaque(),
            write_line: { info, bytes, length in
                let transport = Unmanaged<AnyObject>.fromOpaque(info!).takeUnretainedValue() as! any QueryServerTransport
                transport.writeLine(UnsafeRawBufferPointer(start: bytes, count: length))
            },
            read_line: { info, bytes, length in
                let transport = Unmanaged<AnyObject>.fromOpaque(info!).takeUnretainedValue() as! any QueryServerTransport
                guard let line = transport.readLine() else { return false }
                bytes!.pointee = line.baseAddress?.assumingMemoryBound(to: CChar.self)
                length!.pointee = line.count
                return true
            })
        var error = settee_js_error()
        var ddoc: Int32 = -1
        var indexMode: Int32 = -1
        var runtime = QueryServerRuntime.source
        let installed = runtime.withUTF8 { runtime in
            runtime.withMemoryRebound(to: CChar.self) { runtime in
                settee_js_context_install_query_server(context.raw, &host, runtime.baseAddress, runtime.count, &ddoc, &indexMode, &error)
            }
        }
        guard installed else {
            throw JavaScriptError(error)
        }
        designDocumentRunner = JavaScriptFunction(handle: ddoc)
        indexModeSetter = JavaScriptFunction(handle: indexMode)
    }

    /// Serves commands until the input ends (or an empty line, as `couchjs`)
    /// or a fatal error.
    ///
    /// - Returns: The exit status: 0 at the end of input, 255 after a fatal
    ///   error, 1 when the engine ran out of memory.
    public func run() -> Int32 {
        while let line = transport.readLine() {
            if line.isEmpty { return 0 }
            if let status = handle(line: line) { return status }
        }
        return 0
    }

    /// Answers one command line (a list function may read further lines).
    ///
    /// - Returns: `nil` to go on, or the status to exit with after a fatal error.
    public func handle(line: UnsafeRawBufferPointer) -> Int32? {
        let command: QueryServerCommand
        do {
            command = try QueryServerCommand(line)
        } catch {
            return fail(.fatal(QueryServerError("query_protocol_error", "invalid command: \(error)")))
        }
        do {
            switch command.name {
            case "map_doc": return mapDocument(command)
            case "index_doc": return mapDocument(command, indexMode: "dreyfus")
            case "nouveau_index_doc": return mapDocument(command, indexMode: "nouveau")
            case "reduce": return reduce(command, rereduce: false)
            case "rereduce": return reduce(command, rereduce: true)
            case "reset": return try reset(command)
            case "add_fun": return try addFunction(command)
            case "add_lib": return addLibrary(command)
            case "ddoc": return runDesignDocument(line)
            default:
                return fail(.fatal(QueryServerError("unknown_command", "unknown command '\(command.nameText)'")))
            }
        } catch {
            return fail(.error(QueryServerError("query_protocol_error", "invalid command: \(error)")))
        }
    }

    // MARK: Commands

    private func reset(_ command: QueryServerCommand) throws(JSONParseError) -> Int32? {
        // A fresh sandbox, as couchjs gives: the functions' realms, with what
        // they changed, go with them.
        mapFunctions.forEach(context.release)
        mapFunctions = []
        library = "null"
        let configuration = try command.value(0)
        reduceLimit = ReduceLimit(configuration: configuration)
        if case .number(let milliseconds, _)? = configuration?["timeout"], milliseconds >= 1 {
            settee_js_context_set_timeout(context.raw, UInt32(min(milliseconds, Double(UInt32.max))))
        }
        return answer(true)
    }

    private func addLibrary(_ command: QueryServerCommand) -> Int32? {
        library = command.argument(0).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        return answer(true)
    }

    private func addFunction(_ command: QueryServerCommand) throws(JSONParseError) -> Int32? {
        guard case .string(let source)? = try command.value(0) else {
            return fail(.error(QueryServerError("compilation_error", "Expression does not eval to a function. (\(command.argumentText(at: command.arguments.first)))")))
        }
        do {
            mapFunctions.append(try context.compile(source, name: "map function", library: #"{"views":{"lib":\#(library)}}"#, reused: false))
            return answer(true)
        } catch {
            return fail(compilationFailure(error, source: source))
        }
    }

    /// `map_doc`, or with `indexMode` a search plugin's `index_doc`: then each
    /// function's answer is the fields it passed to `index()` (emitted as row values).
    private func mapDocument(_ command: QueryServerCommand, indexMode: String? = nil) -> Int32? {
        guard let document = command.argument(0) else {
            return fail(.error(QueryServerError("query_protocol_error", "\(command.nameText) needs a document")))
        }
        let output: MapOutput
        do {
            // index() adds nothing to map_doc's rows, emit() nothing to index_doc's fields.
            let mode = indexMode ?? "map"
            if mode != self.indexMode {
                _ = try context.call([indexModeSetter], argumentsJSON: JSONValue.array([.string(mode)]).jsonText)
                self.indexMode = mode
            }
            output = try context.map(document, functions: mapFunctions)
        } catch {
            return fail(failure(of: error))
        }
        // [[[key, value], …] per function], written straight from the engine's JSON.
        response.removeAll(keepingCapacity: true)
        response.append(UInt8(ascii: "["))
        var opened = 0
        var rowsInOpened = 0
        func open(through function: Int) {
            while opened <= function {
                response.append(contentsOf: opened == 0 ? [UInt8(ascii: "[")] : [UInt8(ascii: "]"), UInt8(ascii: ","), UInt8(ascii: "[")])
                opened += 1
                rowsInOpened = 0
            }
        }
        var exceptions: [String] = []
        var abort: CommandFailure?
        let logs = output.forEach(
            rows: { function, key, value in
                open(through: function)
                if rowsInOpened > 0 { response.append(UInt8(ascii: ",")) }
                if indexMode == nil {
                    response.append(UInt8(ascii: "["))
                    response.append(contentsOf: key)
                    response.append(UInt8(ascii: ","))
                    response.append(contentsOf: value)
                    response.append(UInt8(ascii: "]"))
                } else {
                    response.append(contentsOf: value)
                }
                rowsInOpened += 1
            },
            failure: { function, error in
                // As in CouchDB, a function that throws emits nothing for this document.
                open(through: function)
                switch failure(of: error) {
                case .logged(let message): exceptions.append(message)
                case let other: abort = abort ?? other
                }
            })
        for message in logs { log(message) }
        if let abort { return fail(abort) }
        if !exceptions.isEmpty {
            let id = Self.documentID(document)
            for message in exceptions { log("\(message) with doc._id \(id)") }
        }
        if !mapFunctions.isEmpty {
            open(through: mapFunctions.count - 1)
            response.append(UInt8(ascii: "]"))
        }
        response.append(UInt8(ascii: "]"))
        writeResponse()
        return nil
    }

    private func reduce(_ command: QueryServerCommand, rereduce: Bool) -> Int32? {
        let sources: [String]
        let rows: UnsafeRawBufferPointer
        var arguments: [UInt8] = []
        do {
            guard case .array(let values)? = try command.value(0), let input = command.argument(1) else {
                return fail(.error(QueryServerError("query_protocol_error", "\(command.name!) needs functions and values")))
            }
            sources = values.map { if case .string(let source) = $0 { source } else { $0.jsonText } }
            rows = input
            if rereduce {
                arguments.append(contentsOf: "[null,".utf8)
                arguments.append(contentsOf: rows)
                arguments.append(contentsOf: ",true]".utf8)
            } else {
                try Self.appendKeysAndValues(of: rows, to: &arguments)
            }
        } catch {
            return fail(.error(QueryServerError("query_protocol_error", "invalid \(command.name!) command: \(error)")))
        }
        // Compiled afresh for each command, as couchjs does: no state carries
        // over from one reduce to the next.
        var functions: [JavaScriptFunction] = []
        defer { functions.forEach(context.release) }
        for source in sources {
            do {
                functions.append(try context.compile(source, name: "reduce function", reused: false))
            } catch {
                return fail(compilationFailure(error, source: source))
            }
        }
        let result: CallResult
        do {
            result = try context.call(functions, argumentsJSON: String(decoding: arguments, as: UTF8.self))
        } catch {
            return fail(failure(of: error))
        }
        for message in result.logs { log(message) }
        // As in CouchDB, a reduce function that throws is logged and reduces to null.
        var reductions: [UInt8] = [UInt8(ascii: "[")]
        for (index, outcome) in result.results.enumerated() {
            if index > 0 { reductions.append(UInt8(ascii: ",")) }
            switch outcome {
            case .success(let json):
                reductions.append(contentsOf: json.utf8)
            case .failure(let error):
                switch failure(of: error) {
                case .logged(let message): log(message)
                case let other: return fail(other)
                }
                reductions.append(contentsOf: "null".utf8)
            }
        }
        reductions.append(UInt8(ascii: "]"))
        if reduceLimit.mode != .off {
            // Lengths in UTF-16 units, as CouchDB's JavaScript measures them.
            let inputLength = Self.utf16Length(command.line) - sources.reduce(0) { $0 + $1.utf16.count }
            let outputLength = Self.utf16Length(reductions)
            if reduceLimit.isExceeded(inputLength: inputLength, outputLength: outputLength) {
                var message = ReduceLimit.overflowMessage(inputSize: inputLength, outputSize: outputLength)
                // CouchDB 3.5's views.js names no context; later ones, which configure the limit, do.
                if reduceLimit.isConfigured { message += " context: \(Self.contextText((try? command.value(2)) ?? nil))" }
                guard reduceLimit.mode == .log else {
                    return fail(.error(QueryServerError("reduce_overflow_error", message)))
                }
                log("reduce_overflow_error: \(message)")
            }
        }
        response.removeAll(keepingCapacity: true)
        response.append(contentsOf: "[true,".utf8)
        response.append(contentsOf: reductions)
        response.append(UInt8(ascii: "]"))
        writeResponse()
        return nil
    }

    private func runDesignDocument(_ line: UnsafeRawBufferPointer) -> Int32? {
        let result: CallResult
        do {
            result = try context.call([designDocumentRunner], argumentsJSON: String(decoding: line, as: UTF8.self))
        } catch {
            return fail(failure(of: error))
        }
        for message in result.logs { log(message) }
        switch result.results[0] {
        case .success("null"):
            return nil
        case .success(let json):
            // ["error", type, reason] or ["fatal", type, reason] from the runtime.
            guard case .array(let parts)? = try? JSONValue(parsing: json), parts.first == .string("fatal") else {
                response = Array(json.utf8)
                writeResponse()
                return nil
            }
            return fail(.fatal(QueryServerError(parts.count > 1 ? parts[1] : .null, parts.count > 2 ? parts[2] : .null)))
        case .failure(let error):
            switch failure(of: error) {
            case .logged(let message): return fail(.error(QueryServerError("render_error", .string(message))))
            case let other: return fail(other)
            }
        }
    }

    // MARK: Failures

    /// What a failed call means for the command (CouchDB's `handleViewError`).
    private enum CommandFailure {
        /// Logged; the function's output is empty (map) or null (reduce).
        case logged(String)
        /// The command is answered with this error.
        case error(QueryServerError)
        /// Answered with this error, then the process exits with 255.
        case fatal(QueryServerError)
        /// The engine ran out of memory: exit with 1, as `couchjs` does.
        case outOfMemory
    }

    private func failure(of error: JavaScriptError) -> CommandFailure {
        switch error.kind {
        case .timeout: return .error(QueryServerError("timeout", .string(error.message)))
        case .interrupted: return .error(QueryServerError("interrupted", .string(error.message)))
        case .outOfMemory: return .outOfMemory
        case .compile: return .error(QueryServerError("compilation_error", .string(error.message)))
        case .invalidInput: return .error(QueryServerError("query_protocol_error", .string(error.message)))
        case .runtime, .internal: break
        }
        let message = error.message
        // A thrown string arrives as itself, another non-Error value as its JSON text.
        if message == "fatal_error" {
            return .error(QueryServerError("map_runtime_error", "function raised 'fatal_error'"))
        }
        if message.hasPrefix("["), case .array(let parts)? = try? JSONValue(parsing: message), parts.first == .string("fatal") {
            return .fatal(QueryServerError(parts.count > 1 ? parts[1] : .null, parts.count > 2 ? parts[2] : .null))
        }
        if message.hasPrefix("InternalError: ") {
            return .fatal(QueryServerError("InternalError", .string(String(message.dropFirst("InternalError: ".count)))))
        }
        // CouchDB's handleViewError: "function raised exception " + errstr(err).
        return .logged("function raised exception \(error.thrownSource.isEmpty ? message : error.thrownSource)")
    }

    private func compilationFailure(_ error: JavaScriptError, source: String) -> CommandFailure {
        guard error.kind == .compile else { return failure(of: error) }
        if error.message.hasPrefix("Expression does not eval to a function") {
            return .error(QueryServerError("compilation_error", .string("Expression does not eval to a function. (\(source))")))
        }
        return .error(QueryServerError("compilation_error", .string("\(error.message) (\(source))")))
    }

    private func fail(_ failure: CommandFailure) -> Int32? {
        switch failure {
        case .logged(let message):
            log(message)
            return nil
        case .error(let error):
            answer(error.json)
            return nil
        case .fatal(let error):
            logger.info("query server: fatal error", metadata: ["error.type": "\(error.type)", "error.reason": "\(error.reason)"])
            answer(error.json)
            return 255
        case .outOfMemory:
            logger.info("query server: out of memory")
            return 1
        }
    }

    // MARK: Output

    @discardableResult
    private func answer(_ value: JSONValue) -> Int32? {
        // Not through `response`: log lines are written while a map answer is being built there.
        var line: [UInt8] = []
        JSONWriter.write(value, into: &line)
        line.withUnsafeBytes { transport.writeLine($0) }
        return nil
    }

    private func log(_ message: String) {
        answer(["log", .string(message)])
    }

    private func writeResponse() {
        response.withUnsafeBytes { transport.writeLine($0) }
    }

    // MARK: Helpers

    /// `[keys, values, false]` for `reduce` from its `[[key, id], value]` rows,
    /// in one pass over the rows' bytes.
    private static func appendKeysAndValues(of rows: UnsafeRawBufferPointer, to arguments: inout [UInt8]) throws(JSONParseError) {
        var lexer = JSONLexer(rows)
        var values: [UInt8] = [UInt8(ascii: "[")]
        values.reserveCapacity(rows.count)
        func expect(_ byte: Unicode.Scalar) throws(JSONParseError) {
            lexer.skipWhitespace()
            guard lexer.next(is: UInt8(ascii: byte)) else { throw lexer.unexpected() }
            lexer.position &+= 1
            lexer.skipWhitespace()
        }
        func value() throws(JSONParseError) -> UnsafeRawBufferPointer {
            let start = lexer.position
            try lexer.skipValue(depth: 2, maximumDepth: JSONParser.defaultMaximumDepth)
            return UnsafeRawBufferPointer(rebasing: rows[start..<lexer.position])
        }
        arguments.append(contentsOf: "[[".utf8)
        try expect("[")
        if lexer.next(is: UInt8(ascii: "]")) {
            lexer.position &+= 1
        } else {
            var first = true
            repeat {
                if !first {
                    arguments.append(UInt8(ascii: ","))
                    values.append(UInt8(ascii: ","))
                }
                first = false
                try expect("[")
                arguments.append(contentsOf: try value())
                try expect(",")
                values.append(contentsOf: try value())
                try expect("]")
            } while try lexer.skipElementSeparator(closing: UInt8(ascii: "]"))
        }
        try lexer.expectEnd()
        arguments.append(contentsOf: "],".utf8)
        arguments.append(contentsOf: values)
        arguments.append(contentsOf: "],false]".utf8)
    }

    /// The document's `_id` as JavaScript would print it, for error messages.
    private static func documentID(_ document: UnsafeRawBufferPointer) -> String {
        guard let members = try? JSONObjectScanner.scan(document),
              let member = members.last(where: { $0.key == "_id" }),
              let id = try? JSONParser.parse(UnsafeRawBufferPointer(rebasing: document[member.valueRange]))
        else { return "undefined" }
        if case .string(let text) = id { return text }
        return id.jsonText
    }

    /// The reduce context argument as JavaScript's `Array.join` shows it.
    private static func contextText(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: ""
        case .string(let text)?: text
        case let other?: other.jsonText
        }
    }

    /// The UTF-16 length of UTF-8 text: one unit per scalar, two above U+FFFF.
    private static func utf16Length(_ bytes: some Sequence<UInt8>) -> Int {
        var length = 0
        for byte in bytes where byte & 0xC0 != 0x80 {
            length += byte >= 0xF0 ? 2 : 1
        }
        return length
    }
}

/// An error answered as `["error", type, reason]`.
package struct QueryServerError {
    package var type: JSONValue
    package var reason: JSONValue

    package init(_ type: JSONValue, _ reason: JSONValue) {
        self.type = type
        self.reason = reason
    }

    package init(_ type: String, _ reason: String) {
        self.init(.string(type), .string(reason))
    }

    package var json: JSONValue { ["error", type, reason] }
}

extension QueryServerCommand {
    /// An argument's JSON text, for messages.
    package func argumentText(at range: Range<Int>?) -> String {
        guard let range else { return "undefined" }
        return String(decoding: UnsafeRawBufferPointer(rebasing: line[range]), as: UTF8.self)
    }
}
