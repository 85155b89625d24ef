import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews
/// The changes feed as an endless `AsyncSequence`, CouchDB's
/// `feed=continuous`: ``Database/continuousChanges(since:)`` returns it.
///
/// It yields every change after the starting sequence, oldest first, then
/// waits for new writes and yields them as they commit. A document changed
/// several times before it is read appears once, at its latest change, as in
/// CouchDB. Iteration does the work: ending the loop (`break`, or cancelling
/// its task) ends the feed. The feed ends when the database closes.
///
/// ```swift
/// var since = savedCheckpoint
/// for try await change in db.continuousChanges(since: since) {
///     try await upload(change)
///     since = change.sequence
/// }
/// ```
public struct ChangeFeed: AsyncSequence, Sendable {
    /// Each element is a ``Change``.
    public typealias Element = Change

    let database: Database
    let since: UInt64
    /// How many changes one read of the feed takes.
    static let batchSize = 256

    /// Starts an iteration; see the type's description for what it yields.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(database: database, cursor: since)
    }

    /// The iteration's state: the changes it has seen. Use it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let database: Database
        /// The sequence of the last change yielded.
        private var cursor: UInt64
        private var buffer: [Change] = []
        private var index = 0

        init(database: Database, cursor: UInt64) {
            self.database = database
            self.cursor = cursor
        }

        /// The next change, waiting for one when there is none yet.
        /// - Returns: nil once the calling task is cancelled or the database closed.
        public mutating func next() async throws -> Change? {
            while true {
                if Task.isCancelled { return nil }
                if index < buffer.count {
                    let change = buffer[index]
                    index += 1
                    cursor = change.sequence
                    return change
                }
                do {
                    buffer = try await database.changes(since: cursor, limit: ChangeFeed.batchSize)
                    index = 0
                    if buffer.isEmpty {
                        guard try await database.store.commits.wait(after: cursor) else { return nil }
                    }
                } catch SetteeErrorCode.closed {
                    // Closed before the read or the wait: as when closed while waiting.
                    return nil
                }
            }
        }
    }
}

extension Database {
    /// Every change after `since`, then each new one as it commits: CouchDB's
    /// continuous changes feed, for apps that sync. See ``ChangeFeed``.
    ///
    /// Writes of this process wake it as they commit. Writes of other
    /// processes on the same database (`settee put`, another app) wake it
    /// too: on Linux through inotify on the data file, within a few
    /// milliseconds and with no CPU while nothing is written; elsewhere by
    /// reading LMDB's last committed transaction id every 50 ms.
    public func continuousChanges(since: UInt64 = 0) -> ChangeFeed {
        ChangeFeed(database: self, since: since)
    }
}
