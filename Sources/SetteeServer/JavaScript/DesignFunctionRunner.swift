import Foundation
import Settee
import SetteeJavaScript
import SetteeQueryServer
import Synchronization

/// Runs design documents' functions (filters, views used as filters) as
/// CouchDB runs them: through its query-server protocol, here
/// ``QueryServer`` on Settee's JavaScript engine in this process, each on a
/// worker thread of its own.
///
/// The servers are made on first use, up to one per core, and kept for the
/// process; a call takes an idle one (or waits for one) and gives it back.
/// A design document is sent (`["ddoc", "new", id, ddoc]`) before each
/// batch of calls, so a server never runs an old version of it.
final class DesignFunctionRunner: Sendable {
    /// The process's runner, shared by every server.
    static let shared = DesignFunctionRunner(limit: max(1, ProcessInfo.processInfo.activeProcessorCount))

    private struct State {
        var idle: [Session] = []
        var made = 0
        var waiting: [CheckedContinuation<Session, any Error>] = []
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// One query server on its worker thread.
    final class Session: @unchecked Sendable {
        let worker: JavaScriptWorker
        /// Used only on `worker`'s thread.
        private var server: QueryServer?
        private let transport = MemoryTransport()
        /// Set (on the worker's thread) after a fatal error: the session is
        /// not used again, as CouchDB starts a new `couchjs` after one exits.
        private let ended = Mutex(false)
        var isEnded: Bool { ended.withLock { $0 } }

        init() throws {
            worker = try JavaScriptWorker()
        }

        /// Sends each command line and returns each answer (its last line;
        /// `["log", …]` lines before it are dropped).
        func send(_ commands: [JSONValue]) async throws -> [JSONValue] {
            try await worker.run { [self] context in
                if server == nil { server = try QueryServer(context: context, transport: transport) }
                var answers: [JSONValue] = []
                for command in commands {
                    transport.output.removeAll()
                    var line = Array(command.jsonText.utf8)
                    let status = line.withUnsafeMutableBytes { server!.handle(line: UnsafeRawBufferPointer($0)) }
                    guard let answer = transport.output.last else {
                        throw CouchError(.internalServerError, "os_process_error", "the query server gave no answer")
                    }
                    let parsed = try JSONValue(parsing: String(decoding: answer, as: UTF8.self))
                    if status != nil {
                        ended.withLock { $0 = true }
                        throw CouchError(.internalServerError, parsed[1]?.stringValue ?? "os_process_error",
                                         parsed[2]?.stringValue ?? "the query server stopped: \(parsed.jsonText)")
                    }
                    answers.append(parsed)
                }
                return answers
            }
        }
    }

    /// A transport that keeps the lines written; functions that read lines
    /// (lists) read nothing.
    private final class MemoryTransport: QueryServerTransport {
        var output: [[UInt8]] = []
        func readLine() -> UnsafeRawBufferPointer? { nil }
        func writeLine(_ line: UnsafeRawBufferPointer) { output.append(Array(line)) }
    }

    /// Runs `body` with a session of its own.
    func withSession<T: Sendable>(_ body: (Session) async throws -> T) async throws -> T {
        let session = try await checkOut()
        defer { checkIn(session) }
        return try await body(session)
    }

    private func checkOut() async throws -> Session {
        enum Next { case session(Session), make, wait }
        let next: Next = state.withLock { state in
            if let session = state.idle.popLast() { return .session(session) }
            if state.made < limit { state.made += 1; return .make }
            return .wait
        }
        switch next {
        case .session(let session):
            return session
        case .make:
            do {
                return try Session()
            } catch {
                state.withLock { $0.made -= 1 }
                throw error
            }
        case .wait:
            return try await withCheckedThrowingContinuation { continuation in
                let ready: Session? = state.withLock { state in
                    if let session = state.idle.popLast() { return session }
                    state.waiting.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    private func checkIn(_ session: Session) {
        if session.isEnded {
            // Its place goes to a new session, made by the next caller.
            let waiter: CheckedContinuation<Session, any Error>? = state.withLock { state in
                state.made -= 1
                return state.waiting.isEmpty ? nil : state.waiting.removeFirst()
            }
            if let waiter {
                do {
                    state.withLock { $0.made += 1 }
                    waiter.resume(returning: try Session())
                } catch {
                    state.withLock { $0.made -= 1 }
                    waiter.resume(throwing: error)
                }
            }
            return
        }
        let waiter: CheckedContinuation<Session, any Error>? = state.withLock { state in
            if !state.waiting.isEmpty { return state.waiting.removeFirst() }
            state.idle.append(session)
            return nil
        }
        waiter?.resume(returning: session)
    }
}

extension DesignFunctionRunner {
    /// Asks `function` (`["filters", name]` or `["views", name, "map"]`) of
    /// the design document `ddoc` whether each of `documents` passes, as
    /// CouchDB's `couch_query_servers:filter_docs`/`filter_view` do.
    ///
    /// - Parameter request: The `req` argument of a filter function; nil for a view.
    /// - Throws: ``CouchError`` with the query server's error type and reason.
    func passes(_ documents: [JSONValue], ddoc: JSONValue, id: String, function: [String], request: JSONValue?) async throws -> [Bool] {
        guard !documents.isEmpty else { return [] }
        var arguments: [JSONValue] = [.array(documents)]
        if let request { arguments.append(request) }
        let answers = try await withSession { session in
            try await session.send([
                ["ddoc", "new", .string(id), ddoc],
                ["ddoc", .string(id), .array(function.map(JSONValue.string)), .array(arguments)],
            ])
        }
        let answer = answers[1]
        if case .array(let parts) = answer, parts.count == 3, parts[0] == "error" {
            throw CouchError(.internalServerError, parts[1].stringValue ?? parts[1].jsonText,
                             parts[2].stringValue ?? parts[2].jsonText)
        }
        guard case .array(let parts) = answer, parts.count == 2, parts[0] == true, case .array(let passes) = parts[1],
              passes.count == documents.count else {
            throw CouchError(.internalServerError, "os_process_error", "unexpected answer from the query server: \(answer.jsonText)")
        }
        return passes.map { $0 == true }
    }
}
