public import SetteeCore
import SetteeViews

/// A `find` request or index definition rejected as CouchDB's Mango rejects
/// it: the HTTP status, and the `error` and `reason` members of CouchDB's
/// response body, word for word.
public struct MangoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status CouchDB answers with (400 for a bad request).
    public var status: Int
    /// CouchDB's error name, e.g. `invalid_operator`, `no_usable_index`.
    public var error: String
    /// CouchDB's reason, word for word.
    public var reason: String

    /// An error with CouchDB's status, name and reason.
    public init(status: Int = 400, error: String, reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    /// `"<error>: <reason>"`.
    public var description: String { "\(error): \(reason)" }

    /// A JSON value as Erlang's `~w` writes it (`<<"text">>`, `{[{<<"a">>,1}]}`).
    package static func erlang(_ value: JSONValue) -> String {
        String(decoding: ErlangFormat.write(ErlangTerm(value)), as: UTF8.self)
    }

    /// A JSON value as Erlang's `~p` prints it (`<<"text">>` where `~w` writes bytes).
    package static func erlangPrint(_ value: JSONValue) -> String {
        String(decoding: ErlangFormat.print(ErlangTerm(value), column: 1), as: UTF8.self)
    }

    /// `{bad_arg, Op, Arg}`: an operator given an argument it does not take.
    package static func badArgument(_ operator: String, _ argument: JSONValue) -> MangoError {
        MangoError(error: "bad_arg", reason: "Bad argument for operator \(`operator`): \(erlang(argument))")
    }

    /// `{invalid_operator, Op}`: a `$` name that is no operator.
    package static func invalidOperator(_ operator: String) -> MangoError {
        MangoError(error: "invalid_operator", reason: "Invalid operator: \(`operator`)")
    }

    /// `{not_supported, Op}`: an operator CouchDB knows but does not run.
    package static func notSupported(_ operator: String) -> MangoError {
        MangoError(error: "not_supported", reason: "Unsupported operator: \(`operator`)")
    }

    /// `{bad_field, Selector}`: a selector whose fields do not normalize.
    package static func badField(_ selector: JSONValue) -> MangoError {
        MangoError(error: "bad_field", reason: "Invalid field normalization on selector: \(erlang(selector))")
    }

    /// `{invalid_field_name, Field}`: a field path with an empty part (`a..b`).
    package static func invalidFieldName(_ field: String) -> MangoError {
        MangoError(error: "invalid_field_name", reason: "Invalid field name: \(field)")
    }

    /// `{invalid_selector, missing_field_name}`.
    package static let missingFieldName = MangoError(
        error: "invalid_selector", reason: "One or more conditions is missing a field name.")

    /// `{invalid_selector_json, Selector}`: a selector that is not an object.
    package static func invalidSelectorJSON(_ selector: JSONValue) -> MangoError {
        MangoError(error: "invalid_selector_json", reason: "Selector must be a JSON object, not: \(erlang(selector))")
    }
}

extension MangoError: SetteeError {
    /// ``SetteeErrorCode/badRequest`` for CouchDB's 400s, ``SetteeErrorCode/notFound`` for its 404s.
    public var errorCode: SetteeErrorCode {
        switch status {
        case 404: .notFound
        case 400: .badRequest
        default: SetteeErrorCode(rawValue: error)
        }
    }
}
