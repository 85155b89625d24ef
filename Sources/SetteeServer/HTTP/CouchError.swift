import Foundation
public import HTTPTypes
import Hummingbird
import NIOHTTP1
public import Settee

/// An HTTP error in CouchDB's shape: a status and a body `{"error": …, "reason": …}`.
public struct CouchError: Error, Sendable, Equatable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// CouchDB's error word (`not_found`, `conflict`, `bad_request`, …).
    public var error: String
    /// What was wrong, in CouchDB's words where it has them.
    public var reason: String

    /// An error with CouchDB's status, word and reason.
    public init(_ status: HTTPResponse.Status, _ error: String, _ reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    /// The response body.
    public var json: JSONValue { ["error": .string(error), "reason": .string(reason)] }

    static let databaseMissing = CouchError(.notFound, "not_found", "Database does not exist.")
    static let missing = CouchError(.notFound, "not_found", "missing")
    static func badRequest(_ reason: String) -> CouchError { CouchError(.badRequest, "bad_request", reason) }
    static let invalidJSON = CouchError(.badRequest, "bad_request", "invalid UTF-8 JSON")
    static let methodNotAllowed = CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,HEAD allowed")
    static func methodNotAllowed(_ allowed: String) -> CouchError {
        CouchError(.methodNotAllowed, "method_not_allowed", "Only \(allowed) allowed")
    }

    /// The CouchDB error for any error Settee throws.
    init(from error: any Error) {
        switch error {
        case let error as CouchError:
            self = error
        case let error as MangoError:
            self.init(HTTPResponse.Status(code: error.status), error.error, error.reason)
        case let error as QueryError:
            self.init(.badRequest, error.error, error.reason)
        case let error as PartitionError:
            self.init(.badRequest, error.error, error.reason)
        case let error as DocumentError:
            // CouchDB's word for a design document it refuses (couch_db:validate_ddoc/2).
            let word = error.code == .invalidDesignDocument ? "invalid_design_doc" : error.code.rawValue
            self.init(Self.status(of: error.code), word, Self.reason(of: error))
        case is JSONParseError:
            self = .invalidJSON
        case let error as HTTPParserError:
            // A body the client framed wrongly (a chunk size past any integer, …): the client's error.
            self.init(.badRequest, "bad_request", "malformed HTTP request: \(error)")
        case is CancellationError:
            // The client went away (or the server stopped) while its request was answered.
            self.init(.serviceUnavailable, "cancelled", "the request was called off: its client left or the server is stopping")
        case let error as any SetteeError:
            let status: HTTPResponse.Status = switch error.errorCode {
            case .notFound: .notFound
            case .conflict: .conflict
            case .badRequest, .invalidJSON, .queryParseError, .invalidDesignDocument: .badRequest
            case .documentTooLarge: .contentTooLarge
            case .documentValidation: .badRequest
            case .forbidden: .forbidden
            case .unauthorized: .unauthorized
            default: .internalServerError
            }
            self.init(status, error.errorCode == .invalidDesignDocument ? "invalid_design_doc" : error.errorCode.rawValue, "\(error)")
        default:
            self.init(.internalServerError, "unknown_error", "\(error)")
        }
    }

    private static func status(of code: DocumentError.Code) -> HTTPResponse.Status {
        switch code {
        case .conflict: .conflict
        case .notFound: .notFound
        case .badRequest, .invalidDesignDocument, .missingStub: .badRequest
        case .documentValidation: .badRequest
        case .forbidden: .forbidden
        case .unauthorized: .unauthorized
        case .documentTooLarge: .contentTooLarge
        }
    }

    private static func reason(of error: DocumentError) -> String {
        switch error.code {
        case .conflict: "Document update conflict."
        case .documentTooLarge: error.id ?? error.reason   // CouchDB's reason is the document's id
        default: error.reason
        }
    }
}
