import Foundation
import HTTPTypes
import Logging
import Settee
import SetteeQueryServer
import Synchronization
import SetteeJavaScript

/// Runs design documents' shows, lists, updates and rewrites as CouchDB
/// runs them: through the query server's `ddoc` command (``QueryServer``,
/// the same runtime `settee couchjs` serves), on JavaScript workers of its own,
/// each holding a query server whose lines go to and from memory.
///
/// A design document is sent to a worker (`["ddoc", "new", key, ddoc]`) the
/// first time that worker runs one of its functions in that revision; after a
/// fatal error (a list reading past its rows, the engine out of memory) the
/// worker is replaced, as CouchDB starts a new `couchjs`.
final class DesignFunctionRunner: Sendable {
    /// The runner every server in the process shares, started on first use.
    /// A call that finds both workers busy gets one of its own (up to 6
    /// such) unless its database already holds as many calls as there are
    /// workers: one database's slow functions wait behind each other, not
    /// in front of another database's.
    static let shared = DesignFunctionRunner(count: 2, extraWorkers: 6)
    /// The runner of streamed lists, which hold their worker while their
    /// client reads: a slow client does not hold up shows, updates or filters.
    /// A list that finds every worker busy gets one of its own for the call
    /// (up to 14 such), as CouchDB starts another `couchjs`: clients that
    /// stop reading do not hold up the next list.
    static let lists = DesignFunctionRunner(count: 2, extraWorkers: 14)

    private let slots: [Slot]
    private let turn = Atomic<Int>(0)
    /// The most workers started for one call each while every slot is busy.
    private let extraWorkers: Int
    /// Those running now.
    private let extraInUse = Atomic<Int>(0)
    /// Calls under way or queued, by database.
    private let tenants = Mutex<[String: Int]>([:])

    /// The workers kept running between calls.
    var steadyWorkers: Int { slots.count }
    /// The workers started for one call each that run now.
    var extraWorkersRunning: Int { extraInUse.load(ordering: .relaxed) }

    init(count: Int, extraWorkers: Int = 0) {
        slots = (0 ..< max(1, count)).map { _ in Slot() }
        self.extraWorkers = extraWorkers
    }

    /// The query server's answers (log lines left out) to one `ddoc` call of
    /// `path` (e.g. `["shows", "detail"]`) with `arguments`, after the lines
    /// of `input` the function may read (a list's rows and `["list_end"]`).
    /// With `pipe`, the function reads its lines from the pipe instead and
    /// its answers go there as it writes them (a streamed list).
    ///
    /// - Parameters:
    ///   - key: Names the design document in this revision (and database).
    ///   - tenant: Whose call it is (the database's folder): a tenant holding
    ///     as many calls as there are workers gets no extra worker; nil for
    ///     calls that take one whenever one is free (lists).
    ///   - designDocument: The design document's JSON text.
    /// - Throws: ``CouchError`` for an `["error", type, reason]` answer, or when
    ///   the JavaScript engine cannot start.
    func call(key: String, tenant: String? = nil, designDocument: String, path: [String], arguments: JSONValue,
              input: [String] = [], pipe: ListPipe? = nil) async throws -> [JSONValue] {
        let held = tenant.map { tenant in
            tenants.withLock { tenants in
                defer { tenants[tenant, default: 0] += 1 }
                return tenants[tenant, default: 0]
            }
        } ?? 0
        defer {
            if let tenant {
                tenants.withLock { tenants in
                    let left = tenants[tenant, default: 1] - 1
                    tenants[tenant] = left > 0 ? left : nil
                }
            }
        }
        // The slot with the fewest calls under way (or queued), the next in turn among equals.
        let first = turn.add(1, ordering: .relaxed).newValue
        var slot = slots[first % slots.count]
        for offset in 1 ..< slots.count {
            let other = slots[(first + offset) % slots.count]
            if other.calls.load(ordering: .relaxed) < slot.calls.load(ordering: .relaxed) { slot = other }
        }
        let answers: [JSONValue]
        if slot.calls.load(ordering: .relaxed) > 0, held < slots.count, let extra = takeExtraWorker() {
            defer { extra.end() }
            answers = try await extra.call(key: key, designDocument: designDocument, path: path, arguments: arguments, input: input, pipe: pipe)
        } else {
            answers = try await slot.call(key: key, designDocument: designDocument, path: path, arguments: arguments, input: input, pipe: pipe)
        }
        if case .array(let parts)? = answers.last, parts.count == 3, parts[0] == "error" {
            throw Self.error(type: parts[1], reason: parts[2])
        }
        return answers
    }

    /// A slot of its own for one call while every slot is busy, its worker
    /// ended after the call (`ExtraSlot.end()`); nil when the extra workers
    /// are all in use (the call then waits its turn on a slot).
    private func takeExtraWorker() -> ExtraSlot? {
        var inUse = extraInUse.load(ordering: .relaxed)
        while inUse < extraWorkers {
            let (exchanged, original) = extraInUse.compareExchange(expected: inUse, desired: inUse + 1, ordering: .relaxed)
            if exchanged { return ExtraSlot(runner: self) }
            inUse = original
        }
        return nil
    }

    /// A slot for one call, counted among the extra workers while it lives.
    private final class ExtraSlot: Sendable {
        private let slot = Slot()
        private let runner: DesignFunctionRunner

        init(runner: DesignFunctionRunner) {
            self.runner = runner
        }

        deinit { runner.extraInUse.subtract(1, ordering: .relaxed) }

        /// Ends the slot's workers, here: the last job of a worker releases
        /// its closure on the worker's thread, which must not be the last
        /// hold on the worker (it would wait for its own thread to end).
        func end() {
            slot.stopWorkers()
        }

        func call(key: String, designDocument: String, path: [String], arguments: JSONValue,
                  input: [String], pipe: ListPipe?) async throws -> [JSONValue] {
            try await slot.call(key: key, designDocument: designDocument, path: path, arguments: arguments, input: input, pipe: pipe)
        }
    }

    /// The HTTP error for the query server's `["error", type, reason]`, by
    /// `chttpd:error_info`'s table.
    static func error(type: JSONValue, reason: JSONValue) -> CouchError {
        let word = type.stringValue ?? type.jsonText
        let text = reason.stringValue ?? reason.jsonText
        let status: HTTPResponse.Status = switch word {
        case "not_found": .notFound
        case "not_acceptable": .notAcceptable
        case "method_not_allowed": .methodNotAllowed
        case "forbidden": .forbidden
        case "unauthorized": .unauthorized
        case "bad_request", "query_parse_error": .badRequest
        default: .internalServerError
        }
        return CouchError(status, word, text)
    }

    /// One place for a worker: the worker running now, replaced after a fatal error.
    private final class Slot: Sendable {
        private let current = Mutex<(state: WorkerState?, retired: [WorkerState])>((nil, []))
        /// Calls under way or queued on this slot.
        let calls = Atomic<Int>(0)

        /// The worker to use, started when there is none.
        ///
        /// A worker replaced is kept a while (the last four), so that it is
        /// released here, on a caller's thread, long after its last call: a
        /// worker released on its own thread could not join it.
        func state() throws -> WorkerState {
            try current.withLock { current in
                if let state = current.state, !state.isBroken { return state }
                if let broken = current.state { current.retired.append(broken) }
                if current.retired.count > 4 { current.retired.removeFirst() }
                let started = WorkerState(worker: try JavaScriptWorker())
                current.state = started
                return started
            }
        }

        /// Stops the slot's workers, the current one and those replaced, once
        /// their queued work is done (`JavaScriptWorker.stop()`).
        func stopWorkers() {
            let states = current.withLock { current in (current.state.map { [$0] } ?? []) + current.retired }
            for state in states { state.worker.stop() }
        }

        func call(key: String, designDocument: String, path: [String], arguments: JSONValue,
                  input: [String], pipe: ListPipe?) async throws -> [JSONValue] {
            calls.add(1, ordering: .relaxed)
            defer { calls.subtract(1, ordering: .relaxed) }
            // A call queued on a worker that a fatal error ended meanwhile goes to its successor.
            for _ in 0 ..< 3 {
                let state = try state()
                do {
                    return try await state.worker.run { context in
                        try state.call(context, key: key, designDocument: designDocument, path: path, arguments: arguments, input: input, pipe: pipe)
                    }
                } catch is StaleWorker {
                    continue
                }
            }
            throw CouchError(.internalServerError, "os_process_error", "the query server kept stopping after fatal errors")
        }
    }

    /// A worker and the query server on its thread; everything but
    /// `isBroken` is touched only on that thread.
    private final class WorkerState: @unchecked Sendable {
        let worker: JavaScriptWorker
        private let broken = Atomic<Bool>(false)
        private var server: QueryServer?
        private let transport = MemoryTransport()
        private var loaded: Set<String> = []

        init(worker: JavaScriptWorker) {
            self.worker = worker
        }

        /// Whether a fatal error ended its query server (the next call starts another worker).
        var isBroken: Bool { broken.load(ordering: .acquiring) }

        func call(_ context: JavaScriptContext, key: String, designDocument: String, path: [String],
                  arguments: JSONValue, input: [String], pipe: ListPipe?) throws -> [JSONValue] {
            if server == nil {
                server = try QueryServer(context: context, transport: transport)
            }
            guard let server, !isBroken else { throw StaleWorker() }
            defer { transport.reset() }
            if !loaded.contains(key) {
                let line = "[\"ddoc\",\"new\",\(JSONValue.string(key).jsonText),\(designDocument)]"
                if let status = transport.send(line, to: server) {
                    broken.store(true, ordering: .releasing)
                    throw CouchError(.internalServerError, "os_process_error", "the query server stopped (status \(status)) loading \(key)")
                }
                let answers = transport.answers()
                guard answers.last == .bool(true) else { return answers }
                loaded.insert(key)
                transport.reset()
            }
            transport.input = input
            transport.pipe = pipe
            let command: JSONValue = ["ddoc", .string(key), .array(path.map(JSONValue.string)), arguments]
            let status = transport.send(command.jsonText, to: server)
            let answers = transport.answers()
            if let status {
                broken.store(true, ordering: .releasing)
                // A query server that ended without saying why: the engine's own limit stopped it.
                if answers.isEmpty { throw Self.stopped(status: status, path: path) }
            }
            return answers
        }

        /// The error of a query server that ended, answering nothing, during a call of `path`.
        static func stopped(status: Int32, path: [String]) -> CouchError {
            let function = path.joined(separator: ".")
            let reason = status == 1
                ? "out of memory: \(function) took more than the JavaScript engine's heap limit, and its query server was stopped"
                : "the query server stopped (exit status \(status)) running \(function)"
            return CouchError(.internalServerError, "os_process_error", reason)
        }
    }
}

/// A call that reached a worker whose query server had ended.
private struct StaleWorker: Error {}

/// A ``QueryServerTransport`` in memory: input lines queued before a call,
/// output lines collected during it.
private final class MemoryTransport: QueryServerTransport {
    var input: [String] = []
    /// Where a streamed list's rows come from and its answers go, instead of `input` and `output`.
    var pipe: ListPipe?
    private var nextInput = 0
    private var output: [[UInt8]] = []
    private var current: UnsafeMutableRawBufferPointer?

    deinit { current?.deallocate() }

    /// Runs one command line on `server`; the exit status after a fatal error.
    func send(_ line: String, to server: QueryServer) -> Int32? {
        var bytes = Array(line.utf8)
        return bytes.withUnsafeMutableBytes { server.handle(line: UnsafeRawBufferPointer($0)) }
    }

    /// The lines written since the last reset, parsed, without `["log", …]` lines.
    func answers() -> [JSONValue] {
        output.compactMap { line in
            let value = (try? JSONValue(parsing: String(decoding: line, as: UTF8.self))) ?? .null
            if case .array(let parts) = value, parts.first == "log" { return nil }
            return value
        }
    }

    func reset() {
        input = []
        pipe = nil
        nextInput = 0
        output = []
    }

    func readLine() -> UnsafeRawBufferPointer? {
        let bytes: [UInt8]
        if let pipe {
            bytes = pipe.nextRowLine()
        } else {
            guard nextInput < input.count else { return nil }
            bytes = Array(input[nextInput].utf8)
            nextInput += 1
        }
        current?.deallocate()
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        copy.copyBytes(from: bytes)
        current = copy
        return UnsafeRawBufferPointer(rebasing: copy[0 ..< bytes.count])
    }

    func writeLine(_ line: UnsafeRawBufferPointer) {
        if let pipe { return pipe.emit(line) }
        output.append(Array(line))
    }
}
