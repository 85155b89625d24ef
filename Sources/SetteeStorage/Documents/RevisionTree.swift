import SetteeCore

/// A document's revision tree, as CouchDB's `couch_key_tree` keeps it: every
/// revision known (up to the revisions limit back from each leaf) with its
/// parent, and every leaf — a revision no other extends — with its body.
///
/// Settee stores a tree (table `revtrees`, id → ``encoded``) only for a
/// document with more than one leaf. Its ``DocumentRecord`` then holds the
/// winning leaf, as always, and has the flag
/// ``DocumentRecord/revisionTreeFlag``. Every other document is its one
/// leaf (the record) and the ids of that leaf's ancestors, kept compactly
/// in the same table (see `DocumentStore.ancestors(_:of:in:)`).
package struct RevisionTree: Sendable, Equatable {
    /// A leaf: the body of a revision nothing extends.
    package struct Leaf: Sendable, Equatable {
        package var isDeleted: Bool
        /// The body as ``DocumentRecord`` stores it (no `_id`, `_rev`, `_deleted`;
        /// `_attachments` as stubs when ``hasAttachments``).
        package var body: [UInt8]
        package var hasAttachments: Bool

        package init(isDeleted: Bool, body: [UInt8], hasAttachments: Bool) {
            self.isDeleted = isDeleted
            self.body = body
            self.hasAttachments = hasAttachments
        }
    }

    /// The parent of every revision known; nil for a root (the first
    /// revision, or the oldest one kept).
    package private(set) var parents: [Revision: Revision?] = [:]
    /// Every leaf's body.
    package private(set) var leaves: [Revision: Leaf] = [:]

    package init() {}

    /// A tree of one revision: a document Settee kept without one.
    package init(revision: Revision, leaf: Leaf) {
        parents[revision] = .some(nil)
        leaves[revision] = leaf
    }

    /// A tree of one branch: `path` (a revision and its ancestors, newest
    /// first, at least one), its first revision the leaf.
    package init(path: [Revision], leaf: Leaf) {
        for (index, revision) in path.enumerated() {
            parents[revision] = .some(index + 1 < path.count ? path[index + 1] : nil)
        }
        leaves[path[0]] = leaf
    }

    package func contains(_ revision: Revision) -> Bool { parents[revision] != nil }

    /// The leaf revisions, the winner first, then the others in CouchDB's
    /// order (the same ranking, best first).
    package var sortedLeaves: [Revision] {
        leaves.keys.sorted { Self.ranks(($0, leaves[$0]!.isDeleted), above: ($1, leaves[$1]!.isDeleted)) }
    }

    /// The winning revision, as CouchDB picks it: a live leaf beats a
    /// deleted one, then the higher generation, then the greater revision id.
    package var winner: Revision? { sortedLeaves.first }

    /// Whether `a` ranks above `b` as a winner.
    package static func ranks(_ a: (Revision, Bool), above b: (Revision, Bool)) -> Bool {
        if a.1 != b.1 { return !a.1 }
        if a.0.generation != b.0.generation { return a.0.generation > b.0.generation }
        return b.0.hash.lexicographicallyPrecedes(a.0.hash)
    }

    /// The live leaves other than the winner (`_conflicts`).
    package var conflicts: [Revision] {
        sortedLeaves.dropFirst().filter { leaves[$0]?.isDeleted == false }
    }

    /// The deleted leaves other than the winner (`_deleted_conflicts`).
    package var deletedConflicts: [Revision] {
        sortedLeaves.dropFirst().filter { leaves[$0]?.isDeleted == true }
    }

    /// `revision` and its ancestors as far as they are known, newest first.
    package func history(of revision: Revision) -> [Revision] {
        guard contains(revision) else { return [] }
        var path = [revision]
        var current = revision
        while let parent = parents[current] ?? nil, path.count <= parents.count {
            path.append(parent)
            current = parent
        }
        return path
    }

    /// What ``merge(path:leaf:)`` did.
    package enum MergeOutcome: Equatable {
        /// The revision was already known: nothing changed.
        case known
        /// The path extended the leaf given (whose body the new leaf replaces).
        case extended(Revision)
        /// The path added a leaf where none was: a new branch, or a first revision.
        case branched
    }

    /// Merges a revision path, newest first (`_revisions` of a replicated
    /// write): the revisions not yet known are added under the newest one
    /// that is, and the path's first revision becomes a leaf with `leaf`.
    package mutating func merge(path: [Revision], leaf: Leaf) -> MergeOutcome {
        guard let newest = path.first else { return .known }
        if contains(newest) { return .known }
        let knownIndex = path.firstIndex(where: contains)
        let stop = knownIndex ?? path.count
        for index in 0..<stop {
            let parent: Revision? = index + 1 < path.count ? path[index + 1] : nil
            parents[path[index]] = .some(parent)
        }
        leaves[newest] = leaf
        if let knownIndex, leaves.removeValue(forKey: path[knownIndex]) != nil {
            return .extended(path[knownIndex])
        }
        return .branched
    }

    /// Extends the leaf `parent` with `revision` (a normal edit).
    package mutating func extend(_ parent: Revision, with revision: Revision, leaf: Leaf) {
        leaves[parent] = nil
        parents[revision] = .some(parent)
        leaves[revision] = leaf
    }

    /// Removes the leaf `revision` and the ancestors no other leaf shares (a
    /// purge of that leaf).
    package mutating func removeLeaf(_ revision: Revision) {
        guard leaves.removeValue(forKey: revision) != nil else { return }
        var kept = Set<Revision>()
        for leaf in leaves.keys { kept.formUnion(history(of: leaf)) }
        parents = parents.filter { kept.contains($0.key) }
    }

    /// Keeps at most `limit` revisions back from each leaf, as CouchDB's
    /// `couch_key_tree:stem` does; a revision whose parent goes becomes a root.
    package mutating func prune(to limit: Int) {
        let limit = max(limit, 1)
        var kept = Set<Revision>()
        for leaf in leaves.keys { kept.formUnion(history(of: leaf).prefix(limit)) }
        guard kept.count < parents.count else { return }
        var pruned: [Revision: Revision?] = [:]
        for revision in kept {
            let parent = parents[revision] ?? nil
            pruned[revision] = .some(parent.flatMap { kept.contains($0) ? $0 : nil })
        }
        parents = pruned
    }

    // MARK: Encoding

    /// `"RT1"` | u32 node count | nodes (rev, u8 has-parent, parent rev) |
    /// u32 leaf count | leaves (rev, u8 flags, u32 body length, body);
    /// a revision is u32 generation + 16-byte hash, integers little-endian.
    /// `"RT2"` when a revision id is not 16 bytes (``Revision/hash``): each
    /// revision's hash is then preceded by its length (u8).
    package var encoded: [UInt8] {
        let textIDs = parents.contains { $0.key.hash.count != 16 || ($0.value?.hash.count ?? 16) != 16 }
        var out: [UInt8] = Array((textIDs ? "RT2" : "RT1").utf8)
        Self.append(UInt32(parents.count), to: &out)
        for (revision, parent) in parents.sorted(by: { $0.key.description < $1.key.description }) {
            Self.append(revision, to: &out, withLength: textIDs)
            if let parent {
                out.append(1)
                Self.append(parent, to: &out, withLength: textIDs)
            } else {
                out.append(0)
            }
        }
        Self.append(UInt32(leaves.count), to: &out)
        for (revision, leaf) in leaves.sorted(by: { $0.key.description < $1.key.description }) {
            Self.append(revision, to: &out, withLength: textIDs)
            out.append((leaf.isDeleted ? DocumentRecord.deletedFlag : 0) | (leaf.hasAttachments ? DocumentRecord.attachmentsFlag : 0))
            Self.append(UInt32(leaf.body.count), to: &out)
            out.append(contentsOf: leaf.body)
        }
        return out
    }

    /// Decodes ``encoded``; nil when the bytes are not a tree Settee wrote.
    package init?(encoded bytes: UnsafeRawBufferPointer) {
        var reader = Reader(bytes: bytes)
        switch reader.take(3).map(Array.init) {
        case Array("RT1".utf8)?: break
        case Array("RT2".utf8)?: reader.hasLengths = true
        default: return nil
        }
        guard let nodes = reader.u32() else { return nil }
        for _ in 0..<nodes {
            guard let revision = reader.revision(), let hasParent = reader.byte() else { return nil }
            if hasParent == 1 {
                guard let parent = reader.revision() else { return nil }
                parents[revision] = .some(parent)
            } else {
                parents[revision] = .some(nil)
            }
        }
        guard let count = reader.u32() else { return nil }
        for _ in 0..<count {
            guard let revision = reader.revision(), let flags = reader.byte(), let length = reader.u32(),
                  let body = reader.take(Int(length)) else { return nil }
            leaves[revision] = Leaf(isDeleted: flags & DocumentRecord.deletedFlag != 0, body: Array(body),
                                    hasAttachments: flags & DocumentRecord.attachmentsFlag != 0)
        }
        guard reader.offset == bytes.count, !leaves.isEmpty, leaves.keys.allSatisfy(contains) else { return nil }
    }

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func append(_ revision: Revision, to out: inout [UInt8], withLength: Bool) {
        append(revision.generation, to: &out)
        if withLength { revision.appendHashWithLength(to: &out) } else { out.append(contentsOf: revision.hash) }
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0
        /// `RT2`: each hash has its length.
        var hasLengths = false

        mutating func take(_ count: Int) -> UnsafeRawBufferPointer.SubSequence? {
            guard count >= 0, offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        mutating func byte() -> UInt8? { take(1)?.first }

        mutating func u32() -> UInt32? {
            guard let slice = take(4) else { return nil }
            return UInt32(littleEndian: UnsafeRawBufferPointer(rebasing: slice).loadUnaligned(as: UInt32.self))
        }

        mutating func revision() -> Revision? {
            guard let generation = u32(), let length = hasLengths ? byte().map(Int.init) : 16,
                  let hash = take(length) else { return nil }
            return Revision(generation: generation, hash: Array(hash))
        }
    }
}
