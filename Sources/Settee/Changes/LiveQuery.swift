import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews
/// A view query that answers again whenever a write changes its result: the
/// `AsyncSequence` that ``Database/liveQuery(_:options:)`` returns.
///
/// The first element is the query's current result. After that, each
/// committed write wakes the query, which brings the view's index up to date
/// and runs again; a new element comes only when the rows differ from the
/// last one yielded (writes to documents the view does not emit for, or that
/// leave its rows as they were, yield nothing). Writes that land while a run
/// is under way are folded into the next run, so a slow consumer sees the
/// latest result rather than every intermediate one.
///
/// Editing the view's design document (with `Database.loadDesignDocuments(from:)`,
/// a design-document watch, or a put) is a write too: the query re-runs on
/// the new definition. Deleting the view ends the sequence with a
/// ``DocumentError`` (`not_found`).
///
/// Iteration does the work: nothing runs between calls to `next()`, and
/// ending the loop (`break`, or cancelling its task) ends the live query.
/// The sequence ends when the database closes.
///
/// ```swift
/// for try await result in db.liveQuery("addressbook/by_name") {
///     show(try result.decodedRows(key: String.self, value: String.self))
/// }
/// ```
public struct LiveQuery: AsyncSequence, Sendable {
    /// Each element is a ``ViewResult``.
    public typealias Element = ViewResult

    let database: Database
    let path: String
    let options: ViewQueryOptions
    /// Told the sequence each run reflected, and whether it yielded (tests wait on it).
    var runObserver: (@Sendable (_ sequence: UInt64, _ yielded: Bool) -> Void)?

    /// Starts an iteration; see the type's description for what it yields.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(query: self)
    }

    /// The iteration's state: the results it has seen. Use it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let query: LiveQuery
        /// The database sequence the last run reflected.
        private var reflected: UInt64?
        private var last: ViewResult?

        init(query: LiveQuery) {
            self.query = query
        }

        /// The query's result now (the first call), then its next different result.
        /// - Returns: nil once the calling task is cancelled or the database closed.
        public mutating func next() async throws -> ViewResult? {
            let database = query.database
            while true {
                let (path, options) = (query.path, query.options)
                let sequence: UInt64, result: ViewResult
                do {
                    if let reflected {
                        guard try await database.store.commits.wait(after: reflected) else { return nil }
                    }
                    if Task.isCancelled { return nil }
                    // Read before the query: the index it updates reflects at least this sequence.
                    (sequence, result) = try await database.background {
                        (try database.lastSequence(), try database.query(path, options: options))
                    }
                } catch is CancellationError {
                    return nil
                } catch SetteeErrorCode.closed {
                    // Closed before the wait or the query, or while the query ran: as while waiting.
                    return nil
                }
                reflected = sequence
                let changed = last.map { !$0.hasSameRows(as: result) } ?? true
                query.runObserver?(sequence, changed)
                if changed {
                    last = result
                    return result
                }
            }
        }
    }
}

extension ViewResult {
    /// Equal rows, row count and offset; the update sequence may differ.
    func hasSameRows(as other: ViewResult) -> Bool {
        rows == other.rows && totalRows == other.totalRows && offset == other.offset
    }
}

extension Database {
    /// A view query (`DDOC/VIEW`) that yields its current result, then a new
    /// result each time a write changes it. See ``LiveQuery``.
    ///
    /// Writes of this process and of other processes on the same database
    /// wake it (see ``continuousChanges(since:)`` for how, and how soon).
    public func liveQuery(_ path: String, options: ViewQueryOptions = ViewQueryOptions()) -> LiveQuery {
        LiveQuery(database: self, path: path, options: options)
    }
}
