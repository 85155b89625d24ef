import Foundation
public import Settee

/// Why a replication stopped, in the words CouchDB's replicator uses where
/// it has them.
public enum ReplicationError: SetteeError, Equatable {
    /// An endpoint that is not a database: a malformed URL, a missing folder.
    case invalidEndpoint(String)
    /// Options that do not go together, or a filter that cannot be used.
    case invalidOptions(String)
    /// The source database does not exist.
    case sourceMissing(String)
    /// The target database does not exist (and `createTarget` was not set).
    case targetMissing(String)
    /// A server refused a request: its status and CouchDB error.
    case refused(endpoint: String, status: Int, error: String, reason: String)
    /// A server could not be reached or answered something that is not CouchDB's protocol.
    case unreachable(endpoint: String, reason: String)

    public var description: String {
        switch self {
        case .invalidEndpoint(let message), .invalidOptions(let message): return message
        case .sourceMissing(let endpoint): return "Database does not exist: \(endpoint) (the source)"
        case .targetMissing(let endpoint):
            return "Database does not exist: \(endpoint) (the target; create it, or replicate with createTarget)"
        case let .refused(endpoint, status, error, reason): return "\(endpoint) answered \(status) \(error): \(reason)"
        case let .unreachable(endpoint, reason): return "\(endpoint) could not be reached: \(reason)"
        }
    }

    /// CouchDB's error name: `bad_request`, `db_not_found`, the server's own, or `replication_failed`.
    public var errorCode: SetteeErrorCode {
        switch self {
        case .invalidEndpoint, .invalidOptions: return .badRequest
        case .sourceMissing, .targetMissing: return SetteeErrorCode(rawValue: "db_not_found")
        case .refused(_, _, let error, _): return SetteeErrorCode(rawValue: error)
        case .unreachable: return SetteeErrorCode(rawValue: "replication_failed")
        }
    }

    /// Whether trying again later may succeed (a lost connection, a server
    /// restarting or overloaded), as opposed to a refusal that will not change.
    public var isTransient: Bool {
        switch self {
        case .unreachable: return true
        case .refused(_, let status, _, _): return status >= 500 || status == 408 || status == 429
        default: return false
        }
    }
}
