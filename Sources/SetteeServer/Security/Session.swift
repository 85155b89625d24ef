import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/_session`: cookie login (`POST`), who is logged in (`GET`), logout
/// (`DELETE`), as `couch_httpd_auth:handle_session_req/2`.
extension CouchAPI {
    func sessionEndpoint(_ request: inout CouchRequest) async throws -> Response {
        switch request.method {
        case .post:
            let form = try await sessionForm(&request)
            let name = try Self.userName(in: form)
            let password = form["password"] ?? ""
            if let user = try await login(name, password, peer: request.peer), let (_, hash) = try await credentials(name) {
                let cookie = sessionCookie(name: name, salt: hash.salt)
                var headers: HTTPFields = [.setCookie: cookie]
                var status = HTTPResponse.Status.ok
                if let next = try Self.redirect(request.parameter("next")) { status = .found; headers[.location] = next }
                return CouchResponse.json(status, .object([("ok", true), ("name", .string(name)),
                                                           ("roles", .array(user.roles.map(JSONValue.string)))]), headers: headers)
            }
            var headers: HTTPFields = [.setCookie: clearedSessionCookie()]
            var status = HTTPResponse.Status.unauthorized
            if let fail = try Self.redirect(request.parameter("fail")) { status = .found; headers[.location] = fail }
            return CouchResponse.json(status, Self.incorrectCredentials.json, headers: headers)
        case .get, .head:
            if request.user.name == nil, request.parameter("basic") == "true" {
                throw CouchError(.unauthorized, "unauthorized", "Please login.")
            }
            var info: [(key: String, value: JSONValue)] = [("authentication_handlers", ["cookie", "default"])]
            if let handler = request.authenticatedBy { info.append(("authenticated", .string(handler))) }
            // As CouchDB: named when the configuration names it.
            if let users = config.value("chttpd_auth", "authentication_db") { info.append(("authentication_db", .string(users))) }
            return CouchResponse.json(.object([
                ("ok", true),
                ("userCtx", .object([("name", request.user.name.map(JSONValue.string) ?? .null),
                                     ("roles", .array(request.user.roles.map(JSONValue.string)))])),
                ("info", .object(info)),
            ]))
        case .delete:
            var headers: HTTPFields = [.setCookie: clearedSessionCookie()]
            var status = HTTPResponse.Status.ok
            if let next = try Self.redirect(request.parameter("next")) { status = .found; headers[.location] = next }
            return CouchResponse.json(status, ["ok": true], headers: headers)
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }

    /// A `next` or `fail` redirect: a path on this server only (`/…`, not
    /// `//host/…` nor a URL), so that a login link cannot send its user elsewhere.
    static func redirect(_ target: String?) throws(CouchError) -> String? {
        guard let target else { return nil }
        guard target.hasPrefix("/"), !target.hasPrefix("//"), !target.contains("\\"),
              !target.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw CouchError.badRequest("Redirect target must be a path on this server, starting with a single /")
        }
        return target
    }

    /// The most a login form may send: a name and a password.
    static let sessionFormBytes = 64 << 10

    /// The login form: `application/x-www-form-urlencoded` or JSON, of at most ``sessionFormBytes``.
    private func sessionForm(_ request: inout CouchRequest) async throws -> [String: String] {
        let type = request.header(.contentType)?.lowercased() ?? ""
        if type.hasPrefix("application/x-www-form-urlencoded") {
            let body = String(decoding: try await request.bodyBytes(limit: Self.sessionFormBytes), as: UTF8.self)
            return Dictionary(CouchRequest.parseQuery(body).map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        if type.hasPrefix("application/json") {
            guard case .object(let members) = try await request.jsonObjectBody(limit: Self.sessionFormBytes) else { return [:] }
            return Dictionary(members.compactMap { member in member.value.stringValue.map { (member.key, $0) } },
                              uniquingKeysWith: { first, _ in first })
        }
        throw CouchError(.unsupportedMediaType, "bad_content_type",
                         "Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'")
    }

    /// `name` (or `username`) of the form (`couch_httpd_auth:extract_username/1`).
    private static func userName(in form: [String: String]) throws(CouchError) -> String {
        switch (form["name"], form["username"]) {
        case (nil, nil): throw CouchError.badRequest("request body must contain a username")
        case (let name?, nil), (nil, let name?): return name
        case (let name?, let other?):
            guard name == other else { throw CouchError.badRequest("request body contains different usernames") }
            return name
        }
    }
}
