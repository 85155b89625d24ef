public import SetteeCore
import SetteeStorage
/// A view query rejected the way CouchDB rejects it: the `error` and `reason`
/// members of CouchDB's 400 response body, word for word.
public struct QueryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// CouchDB's error name, e.g. `query_parse_error`, `bad_request`, `illegal_partition`.
    public var error: String
    /// CouchDB's reason, word for word.
    public var reason: String

    public init(error: String, reason: String) {
        self.error = error
        self.reason = reason
    }

    /// `"<error>: <reason>"`.
    public var description: String { "\(error): \(reason)" }

    /// `{query_parse_error, Reason}`: what `couch_mrview_http` and `couch_mrview_util:mrverror/1` throw.
    package static func queryParse(_ reason: String) -> QueryError {
        QueryError(error: "query_parse_error", reason: reason)
    }

    /// `{bad_request, Reason}`.
    package static func badRequest(_ reason: String) -> QueryError {
        QueryError(error: "bad_request", reason: reason)
    }
}

extension QueryError: SetteeError {
    /// ``SetteeErrorCode/queryParseError`` for CouchDB's query-parameter
    /// errors, ``SetteeErrorCode/reduceOverflow`` and
    /// ``SetteeErrorCode/reduceFailed`` for reductions that fail,
    /// ``SetteeErrorCode/badRequest`` for the others (`bad_request`, `illegal_partition`).
    public var errorCode: SetteeErrorCode {
        switch error {
        case "query_parse_error": .queryParseError
        case "reduce_overflow_error": .reduceOverflow
        case "builtin_reduce_error", "reduce_error": .reduceFailed
        default: .badRequest
        }
    }
}
