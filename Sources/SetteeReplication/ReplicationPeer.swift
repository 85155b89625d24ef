import Foundation
import Settee

/// What the replicator asks of either end of a replication: CouchDB's
/// replication protocol, spoken to a local database or over HTTP.
protocol ReplicationPeer: Sendable {
    /// The database as messages name it (no credentials).
    var name: String { get }
    /// The database's update sequence and instance start time; nil when it
    /// does not exist.
    func info() async throws -> PeerInfo?
    /// Creates the database.
    func create() async throws
    /// The endpoint's term in the replication id (`get_v4_endpoint`).
    func replicationIDTerm() -> ErlangTermWriter.Term
    /// The UUID of the server holding the database, when it has one.
    func serverUUID() async throws -> String?
    /// The source of filter function `name` (`ddoc/name`), nil when there is none.
    func filterSource(_ name: String) async throws -> String?
    /// The `_local` document `id` (`_local/…`), `_rev` included; nil when missing.
    func localDocument(_ id: String) async throws -> JSONValue?
    /// Writes a `_local` document (with the `_rev` it replaces); returns its new `_rev`.
    func putLocalDocument(_ id: String, _ body: JSONValue) async throws -> String
    /// Up to `limit` changes after `since` (every leaf of each document,
    /// `style=all_docs`), waiting up to `wait` seconds for one when there
    /// are none and `wait` is given.
    func changes(since: JSONValue, limit: Int, filter: ReplicationFilter, wait: Double?) async throws -> ChangesBatch
    /// `_revs_diff`: of the revisions named, those this database lacks, with
    /// their possible ancestors.
    func missingRevisions(_ asked: [(id: String, revisions: [String])]) async throws -> [String: MissingRevisions]
    /// The revisions asked for, each with `_revisions` and its attachments'
    /// data inline except those held at or before `since` (`_bulk_get` with
    /// `revs`, `attachments`, `latest`). A revision no longer a leaf gives
    /// the leaves that descend from it. A peer that reads one document at a
    /// time may stop once what it read passes `byteLimit`: it returns how
    /// many of `wanted` it took.
    func documents(_ wanted: [WantedRevisions], byteLimit: Int) async throws -> (documents: [ReplicatedDocument], taken: Int)
    /// Writes replicated revisions (`new_edits: false`); returns the refusals.
    func write(_ documents: [ReplicatedDocument]) async throws -> [WriteFailure]
}

/// What a database reports of itself.
struct PeerInfo: Sendable {
    var updateSequence: JSONValue
    var instanceStartTime: String
}

/// A batch of the changes feed.
struct ChangesBatch: Sendable {
    var rows: [ChangeRow]
    var lastSequence: JSONValue
}

/// One document of the changes feed: its leaves.
struct ChangeRow: Sendable {
    var sequence: JSONValue
    var id: String
    var revisions: [String]
    var deleted: Bool
}

/// What `_revs_diff` answers for one document.
struct MissingRevisions: Sendable {
    var missing: [String]
    var possibleAncestors: [String]
}

/// Revisions of one document to read, with the revisions the target
/// already has attachments of.
struct WantedRevisions: Sendable {
    var id: String
    var revisions: [String]
    var attachmentsSince: [String]
}

/// A revision read from the source, ready to be written to the target.
struct ReplicatedDocument: Sendable {
    var id: String
    var revision: String
    /// The document's JSON: `_id`, `_rev`, `_revisions`, attachments with their data.
    var json: [UInt8]
}

/// A revision the target refused (its `validate_doc_update`, a size limit…).
public struct WriteFailure: Sendable, Equatable {
    public var id: String
    public var revision: String
    public var error: String
    public var reason: String
}
