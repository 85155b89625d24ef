import SetteeCore
import SetteeStorage

/// The changes of one document as an endless `AsyncSequence`: the sequence
/// ``Database/documentChanges(_:since:)`` returns.
///
/// It yields the document's change after the starting sequence (when there is
/// one), then each new one as it commits: an update, a deletion (a
/// ``Change`` with ``Change/isDeleted``), a re-creation. Writes of other
/// documents wake it but yield nothing. As in the changes feed, writes that
/// land between two calls to `next()` fold into one change, the latest.
/// Writes of other processes on the same database are seen too.
///
/// Iteration does the work: ending the loop (`break`, or cancelling its task)
/// ends it.
///
/// ```swift
/// for try await change in db.documentChanges("settings") {
///     apply(try db.document(change.id))
/// }
/// ```
public struct DocumentChanges: AsyncSequence, Sendable {
    /// Each element is a ``Change`` of the document.
    public typealias Element = Change

    let database: Database
    let id: String
    let since: UInt64?

    /// Starts an iteration; see the type's description for what it yields.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(database: database, id: id, cursor: since)
    }

    /// The iteration's state: the sequence it has looked at. Use it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let database: Database
        let id: String
        /// The database's last sequence when the document was last looked at.
        private var cursor: UInt64?

        init(database: Database, id: String, cursor: UInt64?) {
            self.database = database
            self.id = id
            self.cursor = cursor
        }

        /// The document's next change, waiting for one when there is none yet.
        /// - Returns: nil once the calling task is cancelled.
        public mutating func next() async throws -> Change? {
            let store = try database.store
            let id = id
            var cursor: UInt64
            if let known = self.cursor { cursor = known } else { cursor = try await database.lastSequence() }
            defer { self.cursor = cursor }
            while true {
                if Task.isCancelled { return nil }
                // One snapshot: the document's latest change and the sequence it is current at.
                let (last, change) = try database.environment.read { transaction in
                    (try store.lastSequence(in: transaction), try store.latestChange(of: id, in: transaction))
                }
                let after = cursor
                cursor = Swift.max(cursor, last)
                if let change, change.sequence > after { return change }
                guard await store.commits.wait(after: cursor) else { return nil }
            }
        }
    }
}

extension Database {
    /// The changes of one document: each write to it after `since` (by
    /// default, after the database's last sequence when iteration starts),
    /// from this process or another. See ``DocumentChanges``.
    public func documentChanges(_ id: String, since: UInt64? = nil) -> DocumentChanges {
        DocumentChanges(database: self, id: id, since: since)
    }
}
