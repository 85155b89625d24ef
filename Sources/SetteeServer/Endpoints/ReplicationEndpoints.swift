import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// What replication needs of a database: `new_edits=false` writes
/// (`_bulk_docs` and `PUT /{db}/{docid}`), `_revs_diff`, and the leaves,
/// conflicts and histories that reads add (`conflicts`, `deleted_conflicts`,
/// `meta`, `revs`, `open_revs`, `rev=` of a losing leaf).
extension CouchAPI {
    /// `POST /{db}/_bulk_docs` with `"new_edits": false`: each document's
    /// `_rev` (and `_revisions`) merged into its revision tree. As CouchDB,
    /// the answer lists only the documents refused.
    func bulkReplicatedDocuments(_ name: String, _ db: Database, _ documents: [JSONValue],
                                 _ request: inout CouchRequest) async throws -> Response {
        let (prepared, refused) = try await preparedForWrite(documents, database: name, request: request)
        // The documents `_users` refused are answered as refused, the others written.
        let accepted = prepared.indices.filter { refused[$0] == nil }
        var texts: [String] = []
        for index in accepted {
            guard case .object = prepared[index] else { throw CouchError.badRequest("Document must be a JSON object") }
            texts.append(prepared[index].exactJSONText)
        }
        let results = try await db.putReplicated(texts)
        var errors: [JSONValue] = refused.keys.sorted().compactMap { refused[$0] }
        for (index, result) in zip(accepted, results) {
            guard case .failure(let error) = result else { continue }
            let document = prepared[index]
            let couchError = CouchError(from: error)
            errors.append(["id": document["_id"] ?? .null, "rev": document["_rev"] ?? .null,
                           "error": .string(couchError.error), "reason": .string(couchError.reason)])
        }
        return CouchResponse.json(.created, .array(errors))
    }

    /// `PUT /{db}/{docid}?new_edits=false`: one replicated revision.
    func putReplicatedDocument(_ name: String, _ db: Database, id: String, _ request: inout CouchRequest) async throws -> Response {
        var document = try await request.jsonObjectBody()
        document = Self.setting("_id", to: .string(id), in: document)
        if let rev = request.parameter("rev") ?? Self.unquoted(request.header(.ifMatch)), document["_rev"] == nil {
            document = Self.setting("_rev", to: .string(rev), in: document)
        }
        document = try await preparedForWrite(document, database: name, request: request)
        return try await putReplicatedDocument(name, db, id: id, document, following: nil)
    }

    /// Writes `document` as a replicated revision, its attachments that
    /// follow (a `multipart/related` PUT) in `files`.
    func putReplicatedDocument(_ name: String, _ db: Database, id: String, _ document: JSONValue,
                               following files: [URL]?) async throws -> Response {
        guard case .string(let revText)? = document["_rev"], let revision = Revision(revText) else {
            throw CouchError.badRequest("new_edits=false needs the document's _rev (N-<id>)")
        }
        if let files {
            _ = try await db.putReplicated(document.exactJSONText, following: files)
        } else {
            let results = try await db.putReplicated([document.exactJSONText])
            if case .failure(let error) = results.first { throw error }
        }
        return CouchResponse.json(.created, ["ok": true, "id": .string(id), "rev": .string(revision.description)],
                                  headers: [.location: "/\(Self.escapePath(name))/\(Self.escapePath(id))",
                                            .eTag: CouchResponse.etag(revision)])
    }

    /// `POST /{db}/_revs_diff` (and `_missing_revs`): `{"id": ["rev", …]}` →
    /// `{"id": {"missing": [...], "possible_ancestors": [...]}}` for the
    /// documents that lack some.
    func revisionsDifference(_ db: Database, _ operation: String, _ request: inout CouchRequest) async throws -> Response {
        try allow(request, "POST")
        guard case .object(let members) = try await request.jsonObjectBody() else {
            throw CouchError.badRequest("Request body must be a JSON object")
        }
        var asked: [(id: String, revisions: [Revision])] = []
        for (id, value) in members {
            guard case .array(let values) = value else { throw CouchError.badRequest("Revisions of \(id) must be a JSON array of revs") }
            var revisions: [Revision] = []
            for value in values {
                guard case .string(let text) = value, let revision = Revision(text) else {
                    throw CouchError.badRequest("Invalid rev format: \(value.jsonText) (of \(id))")
                }
                revisions.append(revision)
            }
            asked.append((id, revisions))
        }
        let answer = try await db.revisionsDifference(asked)
        if operation == "_missing_revs" {
            let missing = answer.map { ($0.id, JSONValue.array($0.difference.missing.map { .string($0.description) })) }
            return CouchResponse.json(["missing_revs": .object(missing)])
        }
        return CouchResponse.json(.object(answer.map { entry in
            var result: [(String, JSONValue)] = [("missing", .array(entry.difference.missing.map { .string($0.description) }))]
            if !entry.difference.possibleAncestors.isEmpty {
                result.append(("possible_ancestors", .array(entry.difference.possibleAncestors.map { .string($0.description) })))
            }
            return (entry.id, .object(result))
        }))
    }

    /// The document's JSON with what `options` adds, its leaves and history
    /// read when the options need them.
    func documentBytes(_ db: Database, _ document: Document, options: DocumentReadOptions) async throws -> [UInt8] {
        let revisions = options.needsRevisions && !document.id.hasPrefix("_local/") ? try await db.revisions(of: document.id) : nil
        // `_revs_info`: an earlier revision whose body is kept (until compaction) is "available", as in CouchDB.
        var kept: Set<Revision> = []
        if options.revsInfo, let revisions {
            let leaves = Set(revisions.leaves.map(\.revision))
            for revision in revisions.history(of: document.revision) where !leaves.contains(revision) {
                if try await db.document(document.id, revision: revision) != nil { kept.insert(revision) }
            }
        }
        return try options.bytes(of: document, revisions: revisions, kept: kept)
    }

    /// The leaf `revision` of a document when it is not the one `current`
    /// holds (a losing leaf asked for by `rev=`), with its attachments' data
    /// when `options` ask for it.
    func leaf(_ db: Database, id: String, revision: Revision, current: Document?,
              options: DocumentReadOptions = DocumentReadOptions()) async throws -> Document? {
        if let current, current.revision == revision { return current }
        let attachments = options.attachments || options.attachmentsSince != nil
        return try await db.document(id, revision: revision, attachments: attachments, since: options.attachmentsSince)
    }

    /// `open_revs=all`: every leaf, the winner first.
    func openAllRevisions(_ db: Database, id: String, current: Document, options: DocumentReadOptions) async throws -> [OpenRevision] {
        let leaves = try await db.revisions(of: id)?.leaves.map(\.revision) ?? [current.revision]
        var results: [OpenRevision] = []
        for revision in leaves {
            guard let document = try await leaf(db, id: id, revision: revision, current: current, options: options) else { continue }
            results.append(.found(try await documentBytes(db, document, options: options)))
        }
        return results
    }

    /// `open_revs=[…]`: each revision named, a leaf (or, with `latest`, the
    /// leaves that descend from it) or `{"missing": rev}`.
    func openNamedRevision(_ db: Database, id: String, _ text: String, current: Document?,
                           options: DocumentReadOptions) async throws -> [OpenRevision] {
        let revision = Revision(text)!
        // With `latest`, a revision that is no longer a leaf answers with the leaves that descend from it
        // (an earlier revision's body, kept until compaction, is not what a replicator asks for).
        let isLeaf = try await db.revisions(of: id)?.leaves.contains { $0.revision == revision } ?? false
        if let current, !options.latest || isLeaf, let document = try await leaf(db, id: id, revision: revision, current: current, options: options) {
            return [.found(try await documentBytes(db, document, options: options))]
        }
        if options.latest, current != nil, let revisions = try await db.revisions(of: id) {
            var results: [OpenRevision] = []
            for leaf in revisions.leaves where revisions.history(of: leaf.revision).contains(revision) {
                guard let document = try await self.leaf(db, id: id, revision: leaf.revision, current: current, options: options) else { continue }
                results.append(.found(try await documentBytes(db, document, options: options)))
            }
            if !results.isEmpty { return results }
            // A document written before histories were kept knows no ancestors: an older revision is taken for one.
            if let current, revisions.leaves.count == 1, revisions.history(of: current.revision).count == 1,
               current.revision.generation > revision.generation {
                return [.found(try await documentBytes(db, current, options: options))]
            }
        }
        return [.missing(text)]
    }
}

extension DocumentReadOptions {
    /// Whether the document's leaves or history are needed.
    var needsRevisions: Bool { revs || revsInfo || conflicts || deletedConflicts }

    /// The document as JSON with the members asked for, after its own, in
    /// the order CouchDB's `couch_doc:to_json_obj` adds them: `_revisions`,
    /// `_revs_info`, `_local_seq`, `_conflicts`, `_deleted_conflicts`.
    func json(of document: Document, revisions: DocumentRevisions?, kept: Set<Revision> = []) throws -> JSONValue {
        guard case .object(var members) = try document.value else { return try document.value }
        let history = revisions.map { $0.history(of: document.revision) }.flatMap { $0.isEmpty ? nil : $0 } ?? [document.revision]
        if revs {
            members.append(("_revisions", ["start": .number(Double(document.revision.generation)),
                                           "ids": .array(history.map { .string($0.idText) })]))
        }
        if revsInfo {
            let leaves = Set(revisions?.leaves.map(\.revision) ?? [document.revision])
            members.append(("_revs_info", .array(history.map { revision in
                let status = revision == document.revision ? (document.isDeleted ? "deleted" : "available")
                    : leaves.contains(revision) || kept.contains(revision) ? "available" : "missing"
                return ["rev": .string(revision.description), "status": .string(status)]
            })))
        }
        if localSeq { members.append(("_local_seq", .number(Double(document.sequence)))) }
        // Only the winner lists the other leaves, as in CouchDB.
        if let revisions, revisions.winner.revision == document.revision {
            if conflicts, !revisions.conflicts.isEmpty {
                members.append(("_conflicts", .array(revisions.conflicts.map { .string($0.description) })))
            }
            if deletedConflicts, !revisions.deletedConflicts.isEmpty {
                members.append(("_deleted_conflicts", .array(revisions.deletedConflicts.map { .string($0.description) })))
            }
        }
        return .object(members)
    }

    /// The document's JSON bytes: as stored when nothing is added.
    func bytes(of document: Document, revisions: DocumentRevisions?, kept: Set<Revision> = []) throws -> [UInt8] {
        guard revs || revsInfo || localSeq || (revisions != nil && (conflicts || deletedConflicts)) else { return document.jsonBytes }
        return Array(try json(of: document, revisions: revisions, kept: kept).exactJSONText.utf8)
    }
}
