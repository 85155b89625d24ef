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
        try Finder(store: store).findElements(request, indexes: try listIndexes()) { index, scan, entry in
            try self.readIndexEntries(designDocument: index.designDocument ?? "", view: index.name, scan, update: request.update,
                                      conflicts: false, partition: nil, entry)
        }
    }

    /// Runs an ``UnnestRequest`` on a Settee queue (see `findElements(_:)`).
    public func findElements(_ request: UnnestRequest) async throws -> UnnestResult {
        try await background { try self.findElements(request) }
    }
}
