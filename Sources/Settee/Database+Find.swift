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
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func find(_ request: FindRequest) throws -> FindResult {
        try find(request, progress: { _ in })
    }

    /// Runs a `find` query (see ``find(_:)-52ig6``), telling `progress` how
    /// the update of the index it reads goes when the index is behind the
    /// documents (a new index on a large database is built first).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func find(_ request: FindRequest, progress: (IndexProgress) -> Void) throws -> FindResult {
        let finder = try finder(for: request)
        let prepared = try prepared(request, databaseIsPartitioned: finder.databaseIsPartitioned)
        // The reader is only called during the find.
        return try withoutActuallyEscaping(progress) { progress in
            try finder.find(request, prepared: prepared) { index, scan, entry in
                try self.readIndexEntries(designDocument: index.designDocument ?? "", view: index.name, scan, update: request.updatesIndex,
                                          conflicts: request.conflicts, partition: index.partitioned == true ? request.partition : nil,
                                          progress: progress, entry)
            }
        }
    }

    /// How ``find(_:)-52ig6`` would run `request`, in the shape of CouchDB's
    /// `_explain` response: the index it would use and the key range it
    /// would read, the normalized selector, and every other index with the
    /// reason it was not chosen.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func explain(_ request: FindRequest) throws -> JSONValue {
        try finder(for: request).explain(request, indexes: try listIndexes(), databaseName: url.lastPathComponent)
    }

    /// Runs a `find` query and decodes the documents as `T`, each from its
    /// stored text, with the database's ``Options/coding`` (as documents put
    /// as Swift values are encoded).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func find<T: Decodable>(_ request: FindRequest, as type: T.Type) throws -> [T] {
        try find(request).documents(as: T.self, coding: options.coding)
    }

    /// Runs a `find` query on a Settee queue (see ``find(_:)``).
    public func find(_ request: FindRequest) async throws -> FindResult {
        try await background { try self.find(request) }
    }

    /// Runs a `find` query on a Settee queue, telling `progress` how the
    /// update of its index goes (see ``find(_:progress:)-a93e``).
    public func find(_ request: FindRequest, progress: @escaping @Sendable (IndexProgress) -> Void) async throws -> FindResult {
        try await background { try self.find(request, progress: progress) }
    }

    /// Runs a `find` query on a Settee queue and decodes the documents as `T`
    /// once they are read (see ``find(_:as:)``); `T` need not be `Sendable`.
    public func find<T: Decodable>(_ request: FindRequest, as type: T.Type) async throws -> [T] {
        try await find(request).documents(as: T.self, coding: options.coding)
    }

    /// How ``find(_:)-52ig6`` would run `request` (see ``explain(_:)``).
    public func explain(_ request: FindRequest) async throws -> JSONValue {
        try await background { try self.explain(request) }
    }
}

extension FindResult {
    /// The documents found decoded as `T`, each from its text; a
    /// ``DocumentModel`` gets the `_id` and `_rev` the document holds, as
    /// ``Database/get(_:as:coding:)`` gives them.
    func documents<T: Decodable>(as type: T.Type, coding: DocumentCoding) throws -> [T] {
        var bytes: [UInt8] = []
        return try found.map { document in
            bytes.removeAll(keepingCapacity: true)
            document.writeJSON(into: &bytes)
            return try Document.decode(T.self, from: bytes, coding: coding, subject: "a document found")
        }
    }
}
