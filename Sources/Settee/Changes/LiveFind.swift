import Foundation
import SetteeCore
import SetteeFind

/// A `find` query that answers again whenever a write changes its result:
/// the `AsyncSequence` that ``Database/liveFind(_:)`` returns.
///
/// The first element is the query's current result. After that, each
/// committed write (of this process or another) wakes the query, which runs
/// again (bringing its index up to date unless the request's
/// ``FindRequest/update`` is false); a new element comes only when the
/// documents it returns differ from the last ones yielded, byte for byte,
/// or its bookmark or warning do. Writes to documents that do not match,
/// or that leave the page as it was, yield nothing. Writes that land while
/// a run is under way are folded into the next run, so a slow consumer sees
/// the latest result rather than every intermediate one.
///
/// An index created or deleted is a write too: the query is planned again
/// and may change index. A request that becomes invalid (a `use_index` whose
/// index is deleted, with `allow_fallback` false) ends the sequence with
/// its ``MangoError``. The sequence ends when the database closes.
///
/// Iteration does the work: nothing runs between calls to `next()`, and
/// ending the loop (`break`, or cancelling its task) ends the live query.
///
/// ```swift
/// var request = FindRequest(selector: ["type": "task", "done": false])
/// request.sort = [.init("due")]
/// for try await result in db.liveFind(request) {
///     show(try result.decoded(as: Task.self))
/// }
/// ```
public struct LiveFind: AsyncSequence, Sendable {
    /// Each element is a ``FindResult``.
    public typealias Element = FindResult

    let database: Database
    let request: FindRequest
    /// Told the sequence each run reflected, and whether it yielded (tests wait on it).
    var runObserver: (@Sendable (_ sequence: UInt64, _ yielded: Bool) -> Void)?

    /// Starts an iteration; see the type's description for what it yields.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(query: self)
    }

    /// The iteration's state: the result it yielded last. Use it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let query: LiveFind
        /// The database sequence the last run reflected.
        private var reflected: UInt64?
        private var last: FindResult?

        init(query: LiveFind) {
            self.query = query
        }

        /// The query's result now (the first call), then its next different result.
        /// - Returns: nil once the calling task is cancelled or the database closed.
        public mutating func next() async throws -> FindResult? {
            let database = query.database
            while true {
                let request = query.request
                let sequence: UInt64, result: FindResult
                do {
                    if let reflected {
                        guard try await database.store.commits.wait(after: reflected) else { return nil }
                    }
                    if Task.isCancelled { return nil }
                    // Read before the query: what it reads reflects at least this sequence.
                    (sequence, result) = try await database.background {
                        (try database.lastSequence(), try database.find(request))
                    }
                } catch is CancellationError {
                    return nil
                } catch SetteeErrorCode.closed {
                    // Closed before the wait or the query, or while the query ran: as while waiting.
                    return nil
                }
                reflected = sequence
                let changed = last.map { !$0.hasSameAnswer(as: result) } ?? true
                query.runObserver?(sequence, changed)
                if changed {
                    last = result
                    return result
                }
            }
        }
    }
}

/// A ``LiveFind`` whose documents come decoded as `T`: the `AsyncSequence`
/// that ``Database/liveFind(_:as:)`` returns. Each element is the
/// documents of a new result; it yields as the live find does, and ends
/// with the decoding error when a document does not decode.
public struct TypedLiveFind<T: Decodable>: AsyncSequence, Sendable {
    /// Each element is the result's documents, decoded.
    public typealias Element = [T]

    let query: LiveFind
    /// How documents are decoded: the database's ``Database/Options/coding``.
    let coding: DocumentCoding

    /// Starts an iteration (see ``LiveFind``).
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: query.makeAsyncIterator(), coding: coding)
    }

    /// The iteration's state. Use it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: LiveFind.AsyncIterator
        let coding: DocumentCoding

        /// The documents now (the first call), then the next time the result changes.
        /// - Returns: nil once the calling task is cancelled or the database closed.
        public mutating func next() async throws -> [T]? {
            try await base.next()?.documents(as: T.self, coding: coding)
        }
    }
}

extension Database {
    /// A `find` query that yields its current result, then a new result each
    /// time a write changes it. See ``LiveFind``.
    ///
    /// Writes of this process and of other processes on the same database
    /// wake it (see ``continuousChanges(since:)`` for how, and how soon).
    public func liveFind(_ request: FindRequest) -> LiveFind {
        LiveFind(database: self, request: request)
    }

    /// A `find` query whose documents are decoded as `T` (with the
    /// database's ``Options/coding``), yielded now and again each time a
    /// write changes the result. See ``LiveFind``.
    ///
    /// ```swift
    /// for try await tasks in db.liveFind(FindRequest(selector: ["done": false]), as: Task.self) {
    ///     model.tasks = tasks
    /// }
    /// ```
    public func liveFind<T: Decodable>(_ request: FindRequest, as type: T.Type) -> TypedLiveFind<T> {
        TypedLiveFind(query: liveFind(request), coding: options.coding)
    }
}
