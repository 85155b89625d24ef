import Foundation
import Settee
import SetteeCore

/// A database opened in this process as one end of a replication: every
/// call one hop to a Settee thread, each batch in as few transactions as
/// the public API allows.
struct LocalPeer: ReplicationPeer {
    let database: Database

    var name: String { database.url.path }

    func info() async throws -> PeerInfo? {
        let info = try await database.info()
        return PeerInfo(updateSequence: .number(Double(info.updateSequence)), instanceStartTime: "0")
    }

    func create() async throws {}

    func replicationIDTerm() -> ErlangTermWriter.Term { ReplicationID.term(of: .local(database)) }

    func serverUUID() async throws -> String? { nil }

    func filterSource(_ name: String) async throws -> String? {
        guard let slash = name.firstIndex(of: "/"),
              let design = try await database.document("_design/" + name[..<slash]) else { return nil }
        return try design.value["filters"]?[String(name[name.index(after: slash)...])]?.stringValue
    }

    func localDocument(_ id: String) async throws -> JSONValue? {
        try await database.document(id).map { try $0.value }
    }

    func putLocalDocument(_ id: String, _ body: JSONValue) async throws -> String {
        try await database.put(body.exactJSONText).revision.description
    }

    func changes(since: JSONValue, limit: Int, filter: ReplicationFilter, wait: Double?) async throws -> ChangesBatch {
        let cursor = Self.sequence(since)
        var batch = try await read(since: cursor, limit: limit, filter: filter)
        if batch.lastSequence == .number(Double(cursor)), let wait {
            guard try await waitForCommit(after: cursor, seconds: wait) else { return batch }
            batch = try await read(since: cursor, limit: limit, filter: filter)
        }
        return batch
    }

    private func read(since cursor: UInt64, limit: Int, filter: ReplicationFilter) async throws -> ChangesBatch {
        let selector: MangoSelector?
        if case .selector(let value) = filter {
            do { selector = try MangoSelector(value) } catch { throw ReplicationError.invalidOptions("Invalid selector: \(error)") }
        } else {
            selector = nil
        }
        if case .function(let name, _) = filter {
            throw ReplicationError.invalidOptions(
                "The filter function \(name) needs a server to run it: replicate from the database's URL, or use a selector or document ids")
        }
        let database = self.database
        return try await database.background {
            let changes = try database.changes(since: cursor, limit: limit)
            var rows: [ChangeRow] = []
            let ids: Set<String>? = if case .documentIDs(let list) = filter { Set(list) } else { nil }
            for change in changes {
                if let ids, !ids.contains(change.id) { continue }
                if let selector {
                    guard let document = try database.document(change.id), selector.matches(try document.value) else { continue }
                }
                let leaves = try database.revisions(of: change.id)?.leaves
                rows.append(ChangeRow(sequence: .number(Double(change.sequence)), id: change.id,
                                      revisions: leaves?.map(\.revision.description) ?? [change.revision.description],
                                      deleted: change.isDeleted))
            }
            return ChangesBatch(rows: rows, lastSequence: .number(Double(changes.last?.sequence ?? cursor)))
        }
    }

    /// Waits until a write after `cursor` commits (true) or `seconds` pass (false).
    private func waitForCommit(after cursor: UInt64, seconds: Double) async throws -> Bool {
        let database = self.database
        let woken = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await database.waitForCommit(after: cursor) }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        try Task.checkCancellation()
        return woken
    }

    func missingRevisions(_ asked: [(id: String, revisions: [String])]) async throws -> [String: MissingRevisions] {
        let request = asked.map { entry in (id: entry.id, revisions: entry.revisions.compactMap(Revision.init)) }
        var answer: [String: MissingRevisions] = [:]
        for entry in try await database.revisionsDifference(request) {
            answer[entry.id] = MissingRevisions(missing: entry.difference.missing.map(\.description),
                                                possibleAncestors: entry.difference.possibleAncestors.map(\.description))
        }
        return answer
    }

    func documents(_ wanted: [WantedRevisions], byteLimit: Int) async throws -> (documents: [ReplicatedDocument], taken: Int) {
        let database = self.database
        return try await database.background {
            var documents: [ReplicatedDocument] = []
            var bytes = 0
            for (taken, entry) in wanted.enumerated() {
                if bytes > byteLimit { return (documents, taken) }
                guard let tree = try database.revisions(of: entry.id) else { continue }
                let since = entry.attachmentsSince.compactMap(Revision.init)
                var leaves: [Revision] = []
                for text in entry.revisions {
                    guard let revision = Revision(text) else { continue }
                    // `latest`: a revision no longer a leaf gives the leaves that descend from it.
                    let found = tree.leaves.map(\.revision).filter { $0 == revision || tree.history(of: $0).contains(revision) }
                    for leaf in found where !leaves.contains(leaf) { leaves.append(leaf) }
                }
                for leaf in leaves {
                    guard let document = try database.document(entry.id, revision: leaf, attachments: true,
                                                               since: since.isEmpty ? nil : since) else { continue }
                    let json = Self.withRevisions(document, history: tree.history(of: leaf))
                    bytes += json.count
                    documents.append(ReplicatedDocument(id: entry.id, revision: leaf.description, json: json))
                }
            }
            return (documents, wanted.count)
        }
    }

    func write(_ documents: [ReplicatedDocument]) async throws -> [WriteFailure] {
        let results = try await database.putReplicated(documents.map { String(decoding: $0.json, as: UTF8.self) })
        return zip(documents, results).compactMap { document, result in
            guard case .failure(let error) = result else { return nil }
            return WriteFailure(id: document.id, revision: document.revision, error: error.code.rawValue, reason: error.reason)
        }
    }

    /// The document's JSON with `_revisions` (its history, newest first) added last.
    static func withRevisions(_ document: Document, history: [Revision]) -> [UInt8] {
        var json = document.jsonBytes
        let history = history.isEmpty ? [document.revision] : history
        var revisions = ",\"_revisions\":{\"start\":\(document.revision.generation),\"ids\":["
        revisions += history.map { "\"\($0.idText)\"" }.joined(separator: ",")
        revisions += "]}}"
        guard json.last == UInt8(ascii: "}") else { return json }
        json.removeLast()
        json += Array(revisions.utf8)
        return json
    }

    /// A sequence as this database counts them: a number, or the number
    /// that begins a CouchDB sequence string (`"12-g1AAA…"`).
    static func sequence(_ value: JSONValue) -> UInt64 {
        switch value {
        case .number(let number, _) where number >= 0 && number < 1.8e19: return UInt64(number)
        case .string(let text): return UInt64(text.prefix { $0.isNumber }) ?? 0
        default: return 0
        }
    }
}
