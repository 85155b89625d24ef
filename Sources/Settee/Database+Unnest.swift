import Foundation
import SetteeCore
import SetteeFind

/// Queries with one result per array element (SQL++'s `UNNEST`).
extension Database {
    /// Runs an ``UnnestRequest``: each element at its path that matches its
    /// element selector, with its document (which matches its parent
    /// selector), by document `_id`, then by position in the document. An
    /// array index on the path serves it when it can (``UnnestResult/index``
    /// says which); else every document is read.
    ///
    /// ```swift
    /// try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
    /// let home = try db.findElements(UnnestRequest(path: "contacts[].phones", elementSelector: ["type": "home"]))
    /// ```
    /// - Throws: ``MangoError`` for a bad path or selector, as `find` words it; storage errors.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func findElements(_ request: UnnestRequest) throws -> UnnestResult {
        try findElements(request, progress: { _ in })
    }

    /// Runs an ``UnnestRequest`` (see `findElements(_:)`), telling
    /// `progress` how the update of the array index it reads goes when the
    /// index is behind the documents.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func findElements(_ request: UnnestRequest, progress: (IndexProgress) -> Void) throws -> UnnestResult {
        let indexes = try listIndexes()
        // The reader is only called during the query.
        return try withoutActuallyEscaping(progress) { progress in
            try Finder(store: store).findElements(request, indexes: indexes) { index, scan, entry in
                try self.readIndexEntries(designDocument: index.designDocument ?? "", view: index.name, scan, update: request.update,
                                          conflicts: false, partition: nil, progress: progress, entry)
            }
        }
    }

    /// Runs an ``UnnestRequest`` on a Settee queue (see `findElements(_:)`).
    public func findElements(_ request: UnnestRequest) async throws -> UnnestResult {
        try await background { try self.findElements(request) }
    }

    /// Runs an ``UnnestRequest`` on a Settee queue, telling `progress` how
    /// the update of its array index goes (see `findElements(_:progress:)`).
    public func findElements(_ request: UnnestRequest, progress: @escaping @Sendable (IndexProgress) -> Void) async throws -> UnnestResult {
        try await background { try self.findElements(request, progress: progress) }
    }
}
