import Foundation
import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews

/// Async forms of ``Database``'s methods. They run the work on a background
/// thread, so an index build or a large import never blocks Swift's
/// cooperative thread pool; from async code, they are the ones called.
extension Database {
    /// Runs `body` on a background thread.
    func background<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Writes a document given as a JSON object (see `put(_:)`).
    @discardableResult
    public func put(_ json: String) async throws -> WriteResult {
        try await background { try self.put(json) }
    }

    /// Writes `value` as the document `id` (see `put(_:id:revision:)`).
    @discardableResult
    public func put(_ value: some Encodable & Sendable, id: String, revision: Revision? = nil) async throws -> WriteResult {
        try await background { try self.put(value, id: id, revision: revision) }
    }

    /// The document `id` decoded as `T`, or nil.
    public func get<T: Decodable & Sendable>(_ id: String, as type: T.Type = T.self) async throws -> T? {
        try await background { try self.get(id, as: T.self) }
    }

    /// Runs `body` with a batch whose writes commit in one transaction (see `write(_:)`).
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (WriteBatch) throws -> T) async throws -> T {
        try await background { try self.write(body) }
    }

    /// The document with this id, or nil.
    public func document(_ id: String) async throws -> Document? {
        try await background { try self.document(id) }
    }

    /// Deletes a document.
    @discardableResult
    public func delete(_ id: String, revision: Revision?) async throws -> WriteResult {
        try await background { try self.delete(id, revision: revision) }
    }

    /// The documents changed after `since`.
    public func changes(since: UInt64 = 0, limit: Int? = nil) async throws -> [Change] {
        try await background { try self.changes(since: since, limit: limit) }
    }

    /// Imports NDJSON or a JSON array of documents from a file.
    public func importDocuments(from file: URL) async throws -> ImportReport {
        try await background { try self.importDocuments(from: file) }
    }

    /// Loads design documents from a file or folder.
    @discardableResult
    public func loadDesignDocuments(from url: URL) async throws -> [DesignDocument] {
        try await background { try self.loadDesignDocuments(from: url) }
    }

    /// Queries a view (`DDOC/VIEW`).
    public func query(_ path: String, options: ViewQueryOptions = ViewQueryOptions()) async throws -> ViewResult {
        try await background { try self.query(path, options: options) }
    }

    /// CouchDB's `_all_docs`.
    public func allDocuments(options: ViewQueryOptions = ViewQueryOptions()) async throws -> ViewResult {
        try await background { try self.allDocuments(options: options) }
    }
}
