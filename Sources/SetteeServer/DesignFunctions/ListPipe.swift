import Foundation
import Settee
import Synchronization

/// What passes between the three parties of a streamed `_list`: the view
/// read (on a Settee queue), the list function (on its JavaScript worker's
/// thread) and the response being written (an async task).
///
/// Rows go to the function as it asks for them (`getRow()`), its answers
/// (`["start", …]`, `["chunks", …]`, `["end", …]`, `["error", …]`) to the
/// response as they come. Neither side runs ahead: the view read waits while
/// ``rowBudget`` bytes of rows are unread, and the function's next
/// `getRow()` waits while ``outputBudget`` bytes of its answers are unwritten,
/// so a list of millions of rows holds a few hundred kilobytes at a time.
/// The function waits only inside `getRow()`, where waiting does not count
/// against its time limit.
///
/// ``close(because:)`` (the client went, the response ended) ends every wait: the
/// view read stops, the function's next `getRow()` returns `null` and what
/// it sends afterwards is dropped.
final class ListPipe: @unchecked Sendable {
    /// What the list function's thread hands over.
    enum Event: Sendable {
        /// One answer of the query server other than a log line, parsed.
        case answer(JSONValue)
        /// The call ended: the answers it returned otherwise (those
        /// before the list ran, such as loading the design document), or its error.
        case finished(Result<[JSONValue], any Error>)
    }

    /// Bytes of rows the view read may hold ahead of the function.
    static let rowBudget = 256 << 10
    /// Bytes of answers the function may produce ahead of the response.
    static let outputBudget = 256 << 10

    private static let listEnd = Array(#"["list_end"]"#.utf8)

    /// A view read told to stop because the response ended.
    struct Closed: Error {}

    private let condition = NSCondition()
    // Guarded by `condition`:
    private var header: Result<ViewResultHeader, any Error>?
    private var headerWaiter: CheckedContinuation<ViewResultHeader, any Error>?
    private var rows: [[UInt8]] = []
    private var rowsStart = 0
    private var rowBytes = 0
    private var rowsEnded = false
    private var rowsError: (any Error)?
    private var events: [(event: Event, bytes: Int)] = []
    private var eventsStart = 0
    private var eventBytes = 0
    private var eventWaiter: CheckedContinuation<Event?, Never>?
    private var closed = false
    private var closedBecause: String?
    private var rowsHandedOver = 0
    private var endHandedOver = false
    private var peakBytes = 0

    /// A pipe for one `_list` response of the database `database`.
    init(database: String) {
        Self.register(self, database: database)
    }

    // MARK: The view read

    /// Hands over the view's header (`total_rows`, `offset`, `update_seq`);
    /// the function starts with it.
    func deliver(header delivered: ViewResultHeader) {
        deliverHeader(.success(delivered))
    }

    /// Queues a row, as the line `["list_row", ROW]`; waits while the rows
    /// not yet read fill ``rowBudget``.
    ///
    /// - Throws: ``Closed`` once the response ended: the view read stops.
    func put(rowLine line: [UInt8]) throws {
        condition.lock()
        defer { condition.unlock() }
        // Before the header the function has not started: rows wait for it unbounded.
        while !closed, header != nil, rowBytes >= Self.rowBudget { condition.wait() }
        guard !closed else { throw Closed() }
        rows.append(line)
        rowBytes += line.count
        notePeak()
        condition.broadcast()
    }

    /// The view read ended, after its last row or with `error`.
    func endRows(error: (any Error)?) {
        if let error { deliverHeader(.failure(error)) }
        condition.lock()
        rowsEnded = true
        rowsError = error
        condition.broadcast()
        condition.unlock()
    }

    /// The header, once the view read delivered it; the read's error when it failed before.
    func header() async throws -> ViewResultHeader {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            if let header {
                condition.unlock()
                continuation.resume(with: header)
            } else {
                headerWaiter = continuation
                condition.unlock()
            }
        }
    }

    private func deliverHeader(_ result: Result<ViewResultHeader, any Error>) {
        condition.lock()
        guard header == nil else {
            condition.unlock()
            return
        }
        header = result
        let waiter = headerWaiter
        headerWaiter = nil
        condition.broadcast()
        condition.unlock()
        waiter?.resume(with: result)
    }

    // MARK: The function's thread

    /// The next line `getRow()` reads: a row, or `["list_end"]` after the
    /// last one (or once the response ended). Waits for the row, and while
    /// the answers not yet written fill ``outputBudget``.
    func nextRowLine() -> [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        while !closed, eventBytes >= Self.outputBudget || (rowsStart == rows.count && !rowsEnded) {
            condition.wait()
        }
        guard !closed, rowsStart < rows.count else {
            endHandedOver = true
            return Self.listEnd
        }
        let line = rows[rowsStart]
        rows[rowsStart] = []
        rowsStart += 1
        if rowsStart == rows.count || rowsStart >= 1024 {
            rows.removeFirst(rowsStart)
            rowsStart = 0
        }
        rowBytes -= line.count
        rowsHandedOver += 1
        condition.broadcast()
        return line
    }

    /// Hands over one line the query server wrote (log lines are left out).
    func emit(_ line: UnsafeRawBufferPointer) {
        let value = (try? JSONValue(parsing: String(decoding: line, as: UTF8.self))) ?? .null
        if case .array(let parts) = value, parts.first == "log" { return }
        append(.answer(value), bytes: line.count)
    }

    /// The call ended (see ``Event/finished(_:)``).
    func finish(_ result: Result<[JSONValue], any Error>) {
        append(.finished(result), bytes: 0)
    }

    private func append(_ event: Event, bytes: Int) {
        condition.lock()
        guard !closed else {
            condition.unlock()
            return
        }
        if let waiter = eventWaiter {
            eventWaiter = nil
            condition.unlock()
            waiter.resume(returning: event)
            return
        }
        events.append((event, bytes))
        eventBytes += bytes
        notePeak()
        condition.unlock()
    }

    // MARK: The response

    /// The next event, waiting for it; nil once closed.
    func next() async -> Event? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                condition.lock()
                if let event = popEvent() {
                    condition.unlock()
                    continuation.resume(returning: event)
                } else if closed {
                    condition.unlock()
                    continuation.resume(returning: nil)
                } else {
                    eventWaiter = continuation
                    condition.unlock()
                }
            }
        } onCancel: {
            close(because: "the response's task was cancelled")
        }
    }

    /// The next event if there is one now, without waiting.
    func ready() -> Event? {
        condition.lock()
        defer { condition.unlock() }
        return popEvent()
    }

    private func popEvent() -> Event? {
        guard eventsStart < events.count else { return nil }
        let (event, bytes) = events[eventsStart]
        events[eventsStart] = (.finished(.success([])), 0)
        eventsStart += 1
        if eventsStart == events.count {
            events.removeAll(keepingCapacity: true)
            eventsStart = 0
        }
        eventBytes -= bytes
        condition.broadcast()
        return event
    }

    /// Whether the function was told its rows ended (`["list_end"]`).
    var functionSawEnd: Bool {
        condition.lock()
        defer { condition.unlock() }
        return endHandedOver
    }

    /// The view read's error, when it ended with one (the function then saw its rows end there).
    var readError: (any Error)? {
        condition.lock()
        defer { condition.unlock() }
        return rowsError is Closed ? nil : rowsError
    }

    /// Ends every wait: the view read stops, the function's rows end, its
    /// further answers are dropped. Safe from any thread, any number of times.
    func close(because reason: String) {
        condition.lock()
        if !closed { closedBecause = reason }
        closed = true
        let waiter = eventWaiter
        eventWaiter = nil
        let header = headerWaiter
        headerWaiter = nil
        events = []
        eventsStart = 0
        eventBytes = 0
        condition.broadcast()
        condition.unlock()
        waiter?.resume(returning: nil)
        header?.resume(throwing: Closed())
    }

    private func notePeak() {
        peakBytes = max(peakBytes, rowBytes + eventBytes)
    }

    // MARK: Statistics

    /// What a pipe has carried so far: rows the function read, and the most
    /// bytes (rows read ahead and answers not yet written) it held at once.
    struct Statistics: Sendable {
        var rowsHandedOver: Int
        var peakBytes: Int
        /// Why the pipe was closed, nil while it is open.
        var closedBecause: String?
    }

    /// The pipe's statistics now.
    var statistics: Statistics {
        condition.lock()
        defer { condition.unlock() }
        return Statistics(rowsHandedOver: rowsHandedOver, peakBytes: peakBytes, closedBecause: closedBecause)
    }

    private final class WeakPipe: @unchecked Sendable {
        weak var pipe: ListPipe?
        init(_ pipe: ListPipe) { self.pipe = pipe }
    }

    /// The latest pipe of each database, while it lives: how a streamed
    /// list's progress and memory can be watched from outside.
    private static let latest = Mutex<[String: WeakPipe]>([:])

    private static func register(_ pipe: ListPipe, database: String) {
        latest.withLock { latest in
            latest = latest.filter { $0.value.pipe != nil }
            latest[database] = WeakPipe(pipe)
        }
    }

    /// The latest `_list` pipe of the database `database`, while a response still uses it.
    static func latest(database: String) -> ListPipe? {
        latest.withLock { $0[database]?.pipe }
    }
}
