import Foundation
import SetteeCore
import SetteeStorage
import SetteeViews

extension Database {
    /// Removes a document completely, as CouchDB's `_purge`: its record,
    /// its entry in the changes feed (so `_changes` and `_all_docs` no longer
    /// show it), and its place in the counts. Unlike ``delete(_:revision:)-6uzzs``
    /// it leaves no tombstone: the id may be written again as new. Every
    /// view index drops the document's rows on its next update.
    ///
    /// A purge moves the database's update sequence on (as CouchDB's does)
    /// and its purge sequence by one per purged document.
    /// - Parameters:
    ///   - id: The document's `_id` (deleted documents too; not `_local/` ones).
    ///   - revisions: The revisions to purge: the document is purged only
    ///     when its current revision is among them. `nil` purges whatever is
    ///     current.
    /// - Returns: What was purged: `[id: [revision]]`, or `[id: []]` when
    ///   the document was missing or its revision not named.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func purge(_ id: String, revisions: [Revision]? = nil) throws -> PurgeResult {
        try purge([(id, revisions)])
    }

    /// Purges several documents in one transaction, as CouchDB's `_purge`
    /// request `{docid: [revs]}`: each is purged when its current revision
    /// is among those named (an empty list purges whatever is current).
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func purge(_ requests: [String: [Revision]]) throws -> PurgeResult {
        try purge(requests.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    private func purge(_ requests: [(id: String, revisions: [Revision]?)]) throws -> PurgeResult {
        let result = try store.purge(requests)
        // A purged design document's views may leave indexes no design document uses.
        if result.purged.contains(where: { $0.key.hasPrefix("_design/") && !$0.value.isEmpty }) { try removeUnusedIndexes() }
        return result
    }

    /// How many documents have been purged from the database, ever
    /// (CouchDB's `purge_seq`).
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func purgeSequence() throws -> UInt64 {
        try environment.read { try store.purgeSequence(in: $0) }
    }

    /// Purges a document on a background thread (see ``purge(_:revisions:)``).
    @discardableResult
    public func purge(_ id: String, revisions: [Revision]? = nil) async throws -> PurgeResult {
        try await background { try self.purge(id, revisions: revisions) }
    }
}
