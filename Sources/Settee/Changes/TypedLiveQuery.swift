import SetteeCore
import SetteeViews

/// A ``LiveQuery`` whose results come as decoded rows: the `AsyncSequence`
/// that ``TypedView/liveQuery(_:)`` returns. Each element is the query's
/// rows (``TypedViewRow``s, `Identifiable` for lists); it yields as the
/// live query does, and ends with a ``CodingError`` when a row does not fit
/// the view's types.
///
/// ```swift
/// for try await rows in db.view("notes/by_tag", key: String.self, value: Int.self).liveQuery() {
///     model.rows = rows
/// }
/// ```
public struct TypedLiveQuery<Key: Decodable, Value: Decodable, Document: Decodable>: AsyncSequence, Sendable {
    /// Each element is the query's rows, decoded.
    public typealias Element = [TypedViewRow<Key, Value, Document>]

    let query: LiveQuery
    /// How rows are decoded: the database's ``Database/Options/coding``.
    let coding: DocumentCoding

    /// Starts an iteration (see ``LiveQuery``).
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: query.makeAsyncIterator(), coding: coding)
    }

    /// The iteration's state. Use it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: LiveQuery.AsyncIterator
        let coding: DocumentCoding

        /// The rows now (the first call), then the next time they change.
        /// - Returns: nil once the calling task is cancelled.
        public mutating func next() async throws -> Element? {
            try await base.next()?.rows(key: Key.self, value: Value.self, document: Document.self, coding: coding)
        }
    }
}
