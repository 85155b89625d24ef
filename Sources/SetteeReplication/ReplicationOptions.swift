import Foundation
public import Settee

/// Which documents a replication carries: all of them, or those a filter
/// passes (CouchDB's `doc_ids`, `selector` and `filter` + `query_params`,
/// which exclude each other).
public enum ReplicationFilter: Sendable, Equatable {
    /// Every document (design documents too; `_local` documents never).
    case none
    /// Only the documents with these ids.
    case documentIDs([String])
    /// Only the documents a Mango selector matches (CouchDB's `_selector`).
    case selector(JSONValue)
    /// Only the documents a filter function of the source passes:
    /// `"ddoc/name"` (its `filters.name`), with the `req.query` it is given.
    /// Needs a remote source (a server runs the function).
    case function(String, queryParameters: [String: String] = [:])
}

/// How a replication runs.
public struct ReplicationOptions: Sendable {
    /// Whether to keep going after catching up, carrying new changes as they
    /// come, until cancelled (CouchDB's `continuous`).
    public var continuous = false
    /// Whether to create the target database when it does not exist.
    public var createTarget = false
    /// Which documents to carry.
    public var filter: ReplicationFilter = .none
    /// Start from this source sequence instead of the checkpoint (`since_seq`).
    public var sinceSequence: JSONValue?
    /// Changes read per batch (CouchDB's `worker_batch_size`, 500).
    public var batchSize = 500
    /// Seconds between checkpoints while changes are carried (CouchDB's 30 s; 5 s here).
    public var checkpointInterval: Double = 5
    /// Whether to record and use checkpoints (`use_checkpoints`).
    public var useCheckpoints = true
    /// The server identity that enters the replication id. A replication of
    /// the same two databases with the same identity resumes from the same
    /// checkpoints, whoever runs it: nil takes the UUID of the remote
    /// CouchDB server among the endpoints (the source's first), so that a
    /// replication CouchDB ran between them is resumed where it stopped.
    public var serverUUID: String?
    /// Seconds a continuous replication waits before trying again after a
    /// transient failure (doubling up to `retryLimit`).
    public var retryDelay: Double = 1
    /// The longest wait between two tries, in seconds.
    public var retryLimit: Double = 30
    /// Requests a one-shot replication tries again on transient failures before it fails.
    public var retries = 5

    public init() {}
}
