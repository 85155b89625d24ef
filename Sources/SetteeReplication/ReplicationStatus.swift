public import Settee

/// Where a replication is, and what it has done: CouchDB's replication
/// statistics (`_scheduler/jobs`, `_active_tasks`).
public struct ReplicationStatus: Sendable, Equatable {
    /// The phases of a replication.
    public enum State: Sendable, Equatable {
        /// Reading the endpoints and their checkpoints.
        case starting
        /// Carrying changes.
        case running
        /// Continuous and caught up: waiting for the source to change.
        case idle
        /// A transient failure (a server unreachable or restarting): trying
        /// again after a pause, from the last checkpoint.
        case retrying(String)
        /// A one-shot replication carried every change.
        case completed
        /// Cancelled: a continuous replication stopped, or a one-shot one interrupted.
        case stopped
    }

    public var state: State = .starting
    /// CouchDB's replication id: the base id, then `+continuous`, `+create_target`.
    public var replicationID = ""
    /// Revisions asked about at the target (`_revs_diff`).
    public var missingChecked = 0
    /// Revisions the target lacked.
    public var missingFound = 0
    /// Revisions read from the source.
    public var docsRead = 0
    /// Revisions written to the target.
    public var docsWritten = 0
    /// Revisions the target refused (see ``failures``).
    public var docWriteFailures = 0
    /// The source sequence the last checkpoint recorded.
    public var checkpointedSequence: JSONValue?
    /// The source sequence carried up to.
    public var sequence: JSONValue?
    /// The replication log at the source, as last read or written: what
    /// CouchDB's `_replicate` answers (`session_id`, `source_last_seq`,
    /// `history` with counts that go on across runs).
    public var checkpoint: JSONValue?
    /// The last refusals (at most 100): their id, revision and the target's error.
    public var failures: [WriteFailure] = []

    public init() {}
}
