import Foundation
import SetteeCore
import SetteeStorage
import SetteeFind

/// What creating a `find` index did: CouchDB's `POST /db/_index` response.
public struct IndexCreation: Sendable, Equatable {
    /// `created`, or `exists` when the design document already held the same index.
    public var result: String
    /// The design document's id.
    public var id: String
    /// The index's name.
    public var name: String

    /// As CouchDB writes it.
    public var json: JSONValue { ["result": .string(result), "id": .string(id), "name": .string(name)] }
}

/// `find`'s JSON and array indexes, kept in `"language": "query"` design documents as CouchDB keeps them.
extension Database {
    /// Creates a JSON or array index, in its design document (made when missing).
    ///
    /// ```swift
    /// try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["type", "year"]}, "name": "type-year", "ddoc": "books"}"#))
    /// try db.createIndex(IndexRequest(json: #"{"index": {"array": "contacts[].phones", "fields": ["type"]}, "type": "array", "name": "phones"}"#))
    /// ```
    /// - Throws: ``MangoError`` when the design document exists and is not a
    ///   `query` one; storage and conflict errors.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    @discardableResult
    public func createIndex(_ request: IndexRequest) throws -> IndexCreation {
        let index = request.index
        let id = index.designDocument ?? ""
        try checkPartitioned(index)
        return try write { batch in
            var members: [(key: String, value: JSONValue)] = [("_id", .string(id)), ("language", "query")]
            var isNew = true
            if let existing = try batch.document(id), !existing.isDeleted {
                let value = try existing.value
                guard case .object(let stored) = value, value["language"]?.stringValue == "query" else {
                    throw MangoError(error: "invalid_index", reason: "Invalid design document query language.")
                }
                members = stored
                isNew = false
            }
            members = try Self.settingPartitioned(of: index, in: members, isNew: isNew)
            var views = members.first(where: { $0.key == "views" })?.value.objectValue ?? []
            if let position = views.firstIndex(where: { $0.key == index.name }) {
                if views[position].value == index.view { return IndexCreation(result: "exists", id: id, name: index.name) }
                views[position].value = index.view
            } else {
                views.append((index.name, index.view))
            }
            if let position = members.firstIndex(where: { $0.key == "views" }) {
                members[position].value = .object(views)
            } else {
                members.append(("views", .object(views)))
            }
            try batch.put(JSONValue.object(members).jsonText)
            return IndexCreation(result: "created", id: id, name: index.name)
        }
    }

    /// Every index `find` can use: `_all_docs` first, then the JSON and array indexes (type `array`)
    /// by design document and name (CouchDB's `GET /db/_index`).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func listIndexes() throws -> [MangoIndex] {
        try findIndexList().indexes
    }

    /// ``listIndexes()``, with the generation of the list (see ``FindIndexCache``).
    func findIndexList() throws -> (indexes: [MangoIndex], generation: Int) {
        // Read before the design documents: a list confirmed at it is current while it is the last commit.
        let committed = try environment.lastCommittedTransaction
        if let current = findIndexes.indexes(unchangedSince: committed) { return current }
        let records = try store.designDocumentRecords()
        let revisions = records.map { (id: Array($0.id.utf8), revision: $0.revision) }
        if let current = findIndexes.indexes(for: revisions, confirmingAt: committed) { return current }
        // The design documents as parsed once per revision; only query ones hold indexes.
        let partitioned = try isPartitioned()
        let stored = records.compactMap { try? designDocumentCache.parsed($0, databaseIsPartitioned: partitioned) }.filter { $0.language == "query" }
            .flatMap { MangoIndex.indexes(inDesignDocument: $0.json) }.map { $0.resolvingPartitioned(default: partitioned) }
        let indexes = [MangoIndex.allDocuments] + stored.sorted {
            let order = JSONValue.compareBytes($0.designDocument ?? "", $1.designDocument ?? "")
            return order != 0 ? order < 0 : JSONValue.compareBytes($0.name, $1.name) < 0
        }
        return (indexes, findIndexes.keep(indexes, for: revisions, confirmedAt: committed))
    }

    /// Deletes a JSON or array index; its design document goes with its last index.
    /// - Parameters:
    ///   - designDocument: The design document, `NAME` or `_design/NAME`.
    ///   - name: The index's name.
    /// - Throws: ``MangoError`` `not_found` when there is no such index.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func deleteIndex(designDocument: String, name: String) throws {
        let id = MangoIndex.designDocumentID(designDocument)
        try write { batch in
            guard let existing = try batch.document(id), !existing.isDeleted, let value = try? existing.value,
                  value["language"]?.stringValue == "query", case .object(var members) = value,
                  let viewsAt = members.firstIndex(where: { $0.key == "views" }),
                  case .object(var views) = members[viewsAt].value,
                  let position = views.firstIndex(where: { $0.key == name })
            else { throw MangoError(status: 404, error: "not_found", reason: "missing") }
            views.remove(at: position)
            if views.isEmpty { members.remove(at: viewsAt) } else { members[viewsAt].value = .object(views) }
            let rest = members.filter { $0.key != "_id" && $0.key != "_rev" }
            if rest.count == 1, rest[0].key == "language" {
                try batch.delete(id, revision: existing.revision)
            } else {
                try batch.put(JSONValue.object(members).jsonText)
            }
        }
    }

    /// Creates a JSON index on a Settee queue (see ``createIndex(_:)``).
    @discardableResult
    public func createIndex(_ request: IndexRequest) async throws -> IndexCreation {
        try await background { try self.createIndex(request) }
    }

    /// The indexes `find` can use (see ``listIndexes()``).
    public func listIndexes() async throws -> [MangoIndex] {
        try await background { try self.listIndexes() }
    }

    /// Deletes a JSON index on a Settee queue (see ``deleteIndex(designDocument:name:)``).
    public func deleteIndex(designDocument: String, name: String) async throws {
        try await background { try self.deleteIndex(designDocument: designDocument, name: name) }
    }
}
