import SetteeCore

/// A document's leaves and what is known of their history: the winner
/// (the revision the document reads as), its conflicts, and the ancestors
/// kept for each (see `Database.revisions(of:)`).
public struct DocumentRevisions: Sendable, Equatable {
    /// One leaf: a revision no other extends.
    public struct Leaf: Sendable, Equatable {
        public let revision: Revision
        public let isDeleted: Bool
    }

    /// The document's id.
    public let id: String
    /// Every leaf, the winner first, then the others ranked as CouchDB ranks
    /// them (live before deleted, then the higher generation, then the greater id).
    public let leaves: [Leaf]
    package let tree: RevisionTree

    package init(id: String, tree: RevisionTree) {
        self.id = id
        self.tree = tree
        leaves = tree.sortedLeaves.map { Leaf(revision: $0, isDeleted: tree.leaves[$0]!.isDeleted) }
    }

    /// The winning revision: the one the document reads as.
    public var winner: Leaf { leaves[0] }

    /// The live leaves other than the winner (CouchDB's `_conflicts`).
    public var conflicts: [Revision] { leaves.dropFirst().filter { !$0.isDeleted }.map(\.revision) }

    /// The deleted leaves other than the winner (CouchDB's `_deleted_conflicts`).
    public var deletedConflicts: [Revision] { leaves.dropFirst().filter(\.isDeleted).map(\.revision) }

    /// Whether `revision` is known: a leaf, or an ancestor the tree keeps.
    public func contains(_ revision: Revision) -> Bool { tree.contains(revision) }

    /// `revision` and the ancestors kept, newest first (`_revisions`); empty
    /// when the revision is not known.
    public func history(of revision: Revision) -> [Revision] { tree.history(of: revision) }
}

/// What `_revs_diff` answers for one document: the revisions asked about that
/// the database does not have, and the leaves that could be their ancestors.
public struct RevisionsDifference: Sendable, Equatable {
    public var missing: [Revision]
    /// Leaves of an older generation than some missing revision.
    public var possibleAncestors: [Revision]

    public init(missing: [Revision], possibleAncestors: [Revision]) {
        self.missing = missing
        self.possibleAncestors = possibleAncestors
    }
}

extension DocumentStore {
    /// The leaves and history of document `id`, tombstones included; nil when
    /// it was never written (or was purged).
    package func revisions(of id: String, in transaction: LMDBTransaction) throws -> DocumentRevisions? {
        if id.hasPrefix(Self.localPrefix) { return nil }
        return try revisionTree(id, in: transaction).map { DocumentRevisions(id: id, tree: $0) }
    }

    /// CouchDB's `_revs_diff` for each document: the revisions it does not know.
    package func revisionsDifference(_ request: [(id: String, revisions: [Revision])], in transaction: LMDBTransaction)
        throws -> [(id: String, difference: RevisionsDifference)] {
        var answer: [(id: String, difference: RevisionsDifference)] = []
        for (id, asked) in request {
            let known = try revisions(of: id, in: transaction)
            let missing = asked.filter { known?.contains($0) != true }
            guard !missing.isEmpty else { continue }
            var ancestors: [Revision] = []
            if let known, let newest = missing.map(\.generation).max() {
                ancestors = known.leaves.map(\.revision).filter { $0.generation < newest }
            }
            var seen = Set<Revision>()
            answer.append((id, RevisionsDifference(missing: missing.filter { seen.insert($0).inserted }, possibleAncestors: ancestors)))
        }
        return answer
    }
}

extension DocumentStore {
    /// Adds `"_conflicts"` (and, with `deleted`, `"_deleted_conflicts"`) to the
    /// document JSON object that ends `json` — the record `record` of document
    /// `key` — when it has any, as CouchDB opens a document with the options
    /// `conflicts` and `deleted_conflicts`. A record without a tree has none
    /// and costs nothing.
    package func appendConflicts(of record: DocumentRecord, key: UnsafeRawBufferPointer, to json: inout [UInt8], deleted: Bool,
                                 in transaction: LMDBTransaction) throws {
        guard record.hasRevisionTree, json.last == UInt8(ascii: "}") else { return }
        let tree = try revisionTree(key, record: record, in: transaction)
        let members = Self.conflictMembers(tree, deleted: deleted)
        guard !members.isEmpty else { return }
        json.removeLast()
        if json.last != UInt8(ascii: "{") { json.append(UInt8(ascii: ",")) }
        json.append(contentsOf: members)
        json.append(UInt8(ascii: "}"))
    }

    /// The document JSON `text` of document `id` with its conflicts added
    /// (see ``appendConflicts(of:key:to:deleted:in:)``).
    package func addingConflicts(to text: String, id: String, deleted: Bool, in transaction: LMDBTransaction) throws -> String {
        try withTreeRecord(id, in: transaction) { key, record in
            var json = Array(text.utf8)
            try appendConflicts(of: record, key: key, to: &json, deleted: deleted, in: transaction)
            return String(decoding: json, as: UTF8.self)
        } ?? text
    }

    /// The current revision of document `id`, tombstones included (as
    /// ``record(_:in:)`` reads it), its body with `"_conflicts"` added when
    /// it has live losing leaves: the document as CouchDB's changes feed and
    /// `_all_docs` show it with `conflicts=true`.
    package func recordWithConflicts(_ id: String, in transaction: LMDBTransaction) throws -> Document? {
        if id.utf8.first == UInt8(ascii: "_") && id.hasPrefix(Self.localPrefix) { return try record(id, in: transaction) }
        var key = id
        return try key.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            guard let bytes = try transaction.get(docs, key) else { return nil }
            let record = try DocumentRecord(bytes: bytes, id: key, path: environment.path)
            // As record(_:in:): past its expiration time a document reads as missing.
            if try isExpired(key, in: transaction) { return nil }
            var body = Array(record.body)
            try appendConflicts(of: record, key: key, to: &body, deleted: false, in: transaction)
            return Document(id: id, revision: record.revision, sequence: record.sequence, isDeleted: record.isDeleted, body: body)
        }
    }

    /// `"_conflicts":[…]` and `"_deleted_conflicts":[…]`, those not empty.
    private static func conflictMembers(_ tree: RevisionTree, deleted: Bool) -> [UInt8] {
        var out: [UInt8] = []
        func list(_ name: String, _ revisions: [Revision]) {
            guard !revisions.isEmpty else { return }
            if !out.isEmpty { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: "\"\(name)\":[".utf8)
            out.append(contentsOf: revisions.map { "\"\($0)\"" }.joined(separator: ",").utf8)
            out.append(UInt8(ascii: "]"))
        }
        list("_conflicts", tree.conflicts)
        if deleted { list("_deleted_conflicts", tree.deletedConflicts) }
        return out
    }
}
