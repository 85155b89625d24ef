import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Settee
import SetteeCore

/// Who a request speaks for, and how that was learnt.
struct Authentication: Sendable {
    /// The user (`name: nil` and no roles for an anonymous request).
    var user: UserContext
    /// The handler that authenticated it (`cookie` or `default`), as
    /// `GET /_session` reports it; `nil` for an anonymous request.
    var handler: String?
    /// A fresh `AuthSession` cookie to send back: the one sent has used
    /// more than a tenth of its lifetime (CouchDB's refresh rule).
    var refreshedCookie: String?
}

/// CouchDB's authentication handlers, in their default order
/// (`cookie_authentication_handler`, then `default_authentication_handler`):
/// an `AuthSession` cookie, then HTTP Basic; with no administrator anywhere,
/// every request is an administrator's ("admin party").
extension CouchAPI {
    static let incorrectCredentials = CouchError(.unauthorized, "unauthorized", "Name or password is incorrect.")

    func authenticate(_ request: Request, peer: String) async throws -> Authentication {
        if let cookie = Self.cookie("AuthSession", in: request.headers), !cookie.isEmpty,
           let authenticated = try await cookieUser(cookie) {
            return authenticated
        }
        if let (name, password) = try Self.basicCredentials(request.headers[.authorization]) {
            guard let user = try await login(name, password, peer: peer) else { throw Self.incorrectCredentials }
            return Authentication(user: user, handler: "default")
        }
        if !credentials.hasAdministrators { return Authentication(user: .administrator, handler: "default") }
        return Authentication(user: UserContext())
    }

    /// The user `name` when `password` is theirs, nil otherwise; refused
    /// while `name` is locked out from `peer` (``ServerCredentials/checkLockout(name:peer:)``).
    func login(_ name: String, _ password: String, peer: String) async throws -> UserContext? {
        try credentials.checkLockout(name: name, peer: peer)
        guard let (user, hash) = try await credentials(name), credentials.verify(password, name: name, against: hash) else {
            credentials.recordLogin(name: name, peer: peer, succeeded: false)
            return nil
        }
        credentials.recordLogin(name: name, peer: peer, succeeded: true)
        if credentials.administrator(name) == nil { upgradeHashIfAsked(name, password, hash) }
        return user
    }

    /// `[chttpd_auth] upgrade_hash_on_auth`: after a login whose stored hash
    /// has other iterations than `[chttpd_auth] iterations`, the user's
    /// document is written again with a hash of the password at those
    /// iterations, in the background (CouchDB's "async password hasher"). A
    /// write that meets a newer revision leaves it: the next login tries again.
    private func upgradeHashIfAsked(_ name: String, _ password: String, _ hash: PasswordHash) {
        let settings = config.settings
        guard settings.upgradeHashOnAuth, hash.iterations != settings.passwordIterations else { return }
        let databases = databases, users = settings.authenticationDatabase, logger = logger
        Task.detached {
            do {
                let database = try databases.database(users)
                guard let stored = try await database.document(UsersWriteRule.prefix + name), !stored.isDeleted else { return }
                var document = try stored.value
                guard case .object(var members) = document else { return }
                members.removeAll { $0.key == "password" }
                members.append(("password", .string(password)))
                // The salt kept (CouchDB's `preserve_salt`): the user's session cookies, signed with it, stay valid.
                document = CouchAPI.hashingPassword(in: .object(members), iterations: settings.passwordIterations, salt: hash.salt)
                try await Database.$validationContext.withValue(Database.ValidationContext(userContext: .administrator, securityObject: [:])) {
                    _ = try await database.put(document)
                }
            } catch {
                logger.debug("password hash not upgraded", metadata: ["user": "\(name)", "error": "\(error)"])
            }
        }
    }

    /// The user `name` and their password's hash: a server administrator,
    /// or the `org.couchdb.user:NAME` document of the authentication database
    /// (`[chttpd_auth] authentication_db`, `_users`), with its roles.
    func credentials(_ name: String) async throws -> (UserContext, PasswordHash)? {
        if let hash = credentials.administrator(name) { return (UserContext(name: name, roles: ["_admin"]), hash) }
        let users = config.settings.authenticationDatabase
        guard databases.exists(users),
              let document = try await databases.database(users).documentIncludingDeletedWithConflicts("org.couchdb.user:" + name),
              !document.isDeleted else {
            return nil
        }
        let body = try document.value
        // As chttpd_auth_cache: which revision's password counts is not for the server to choose.
        if body["_conflicts"] != nil, config.value("chttpd_auth", "allow_conflicted_user_docs") != "true" {
            throw CouchError(.unauthorized, "unauthorized",
                             "User document conflicts must be resolved before the document is used for authentication purposes.")
        }
        guard let hash = try PasswordHash(userDocument: body, maximumIterations: credentials.maximumIterations) else { return nil }
        let roles = body["roles"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return (UserContext(name: name, roles: roles), hash)
    }

    /// `Authorization: Basic …` as name and password; `nil` without one (or
    /// for CouchDB's `_:_`, "logged out").
    static func basicCredentials(_ header: String?) throws(CouchError) -> (String, String)? {
        guard let header, header.lowercased().hasPrefix("basic ") else { return nil }
        guard let data = Data(base64Encoded: header.dropFirst(6).trimmingCharacters(in: .whitespaces)) else {
            throw CouchError.badRequest("Authorization header has invalid base64 value")
        }
        let pair = String(decoding: data, as: UTF8.self)
        guard let colon = pair.firstIndex(of: ":") else { return nil }
        let name = String(pair[..<colon]), password = String(pair[pair.index(after: colon)...])
        return name == "_" && password == "_" ? nil : (name, password)
    }

    // MARK: Cookies

    /// CouchDB's session lifetime (`[chttpd_auth] timeout`), in seconds.
    var sessionTimeout: Int { config.settings.sessionTimeout }

    /// The user of a valid, unexpired `AuthSession` cookie; `nil` otherwise
    /// (the request then goes on to the next handler, as CouchDB's).
    func cookieUser(_ cookie: String) async throws -> Authentication? {
        guard let decoded = Self.base64URLDecoded(cookie) else {
            throw CouchError.badRequest("Malformed AuthSession cookie. Please clear your cookies.")
        }
        let parts = decoded.split(separator: UInt8(ascii: ":"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw CouchError.badRequest("Malformed AuthSession cookie. Please clear your cookies.") }
        let name = String(decoding: parts[0], as: UTF8.self), time = String(decoding: parts[1], as: UTF8.self)
        // A stamp from the future or past any clock's range is no session (and no overflow below).
        let now = Int(configuration.now().timeIntervalSince1970)
        guard let stamp = Int(time, radix: 16), stamp >= 0, stamp <= now, let (user, hash) = try await credentials(name) else { return nil }
        guard now - stamp < sessionTimeout else { return nil }
        let expected = HMACSHA256(key: Array((credentials.secret + hash.salt).utf8)).authenticationCode(Array("\(name):\(time)".utf8))
        guard HMACSHA256.constantTimeEqual(expected, Array(parts[2])) else { return nil }
        let timeLeft = sessionTimeout - (now - stamp)
        let refreshed = Double(timeLeft) < Double(sessionTimeout) * 0.9 ? sessionCookie(name: name, salt: hash.salt) : nil
        return Authentication(user: user, handler: "cookie", refreshedCookie: refreshed)
    }

    /// A `Set-Cookie` value for a new session of `name`, as
    /// `couch_httpd_auth:cookie_auth_cookie/4` makes it: base64url of
    /// `name:HEXTIME:HMAC-SHA256(secret + salt, "name:HEXTIME")`.
    func sessionCookie(name: String, salt: String) -> String {
        let now = configuration.now()
        let time = String(Int(now.timeIntervalSince1970), radix: 16, uppercase: true)
        let data = "\(name):\(time)"
        let mac = HMACSHA256(key: Array((credentials.secret + salt).utf8)).authenticationCode(Array(data.utf8))
        return cookieHeader(value: Self.base64URLEncoded(Array((data + ":").utf8) + mac), now: now)
    }

    /// The `Set-Cookie` value that ends a session.
    func clearedSessionCookie() -> String { cookieHeader(value: "", now: configuration.now()) }

    /// `AuthSession=…; Version=1; Expires=…; Max-Age=…; Path=/; HttpOnly`, in
    /// mochiweb's order, with `Secure` before `HttpOnly` and `SameSite=…` last when configured.
    func cookieHeader(value: String, now: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd-MMM-yyyy HH:mm:ss 'GMT'"
        let expires = formatter.string(from: now.addingTimeInterval(TimeInterval(sessionTimeout)))
        let secure = configuration.secureCookies ? "; Secure" : ""
        let sameSite = configuration.cookieSameSite.map { "; SameSite=\($0.rawValue)" } ?? ""
        return "AuthSession=\(value); Version=1; Expires=\(expires); Max-Age=\(sessionTimeout); Path=/\(secure); HttpOnly\(sameSite)"
    }

    /// The value of cookie `name` in the request's `Cookie` headers.
    static func cookie(_ name: String, in headers: HTTPFields) -> String? {
        for field in headers[values: .cookie] {
            for pair in field.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    static func base64URLEncoded(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URLDecoded(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map { Array($0) }
    }
}
