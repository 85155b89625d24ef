import Foundation
import SetteeCore
import SetteeFind

/// `find`: CouchDB's Mango queries, without JavaScript.
extension Database {
    /// Runs a `find` query: the documents matching its selector, in its
    /// order, a page at a time.
    ///
    /// ```swift
    /// var request = FindRequest(selector: ["type": "book", "year": ["$gte": 1960]])
    /// request.limit = 10
    /// let page = try db.find(request)
    /// request.bookmark = page.bookmark      // the next page
    /// ```
    ///
    /// - Throws: ``MangoError`` with CouchDB's error and reason for a request
    ///   CouchDB would refuse.
    public func find(_ request: FindRequest) throws -> FindResult {
        try Finder(store: store).find(request, indexes: try listIndexes())
    }

    /// How ``find(_:)`` would run `request`, in the shape of CouchDB's
    /// `_explain` response: the index it would use and the key range it
    /// would read, the normalized selector, and every other index with the
    /// reason it was not chosen.
    public func explain(_ request: FindRequest) throws -> JSONValue {
        try Finder(store: store).explain(request, indexes: try listIndexes(), databaseName: url.lastPathComponent)
    }

    /// Runs a `find` query and decodes the documents as `T`.
    public func find<T: Decodable>(_ request: FindRequest, as type: T.Type) throws -> [T] {
        try find(request).decoded(as: T.self)
    }

    /// Runs a `find` query on a background thread (see ``find(_:)``).
    public func find(_ request: FindRequest) async throws -> FindResult {
        try await background { try self.find(request) }
    }
}
