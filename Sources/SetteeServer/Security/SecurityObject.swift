import Foundation
import Settee
import HTTPTypes
import Synchronization

/// A database's security object (`/{db}/_security`): who administers it and
/// who may read and write it, by name or role.
///
/// ```json
/// {"admins": {"names": [], "roles": []}, "members": {"names": ["ann"], "roles": ["staff"]}}
/// ```
/// With no member names nor roles the database is public; server
/// administrators (role `_admin`) are always both admins and members.
struct SecurityObject: Sendable {
    /// The object as stored and served.
    var json: JSONValue

    /// CouchDB 3.5's object for a new database (`[couchdb] default_security = admin_only`).
    static let adminOnly: JSONValue = .object([("members", .object([("roles", ["_admin"])])),
                                               ("admins", .object([("roles", ["_admin"])]))])

    /// Whether `user` administers the database (`couch_db:is_admin/1`).
    func isAdministrator(_ user: UserContext) -> Bool {
        Self.isAuthorized(user, by: json["admins"])
    }

    /// Whether `user` may read and write the database (`couch_db:is_member/1`).
    func isMember(_ user: UserContext) -> Bool {
        if isAdministrator(user) { return true }
        let members = json["members"] ?? json["readers"]
        let names = members?["names"]?.arrayValue ?? [], roles = members?["roles"]?.arrayValue ?? []
        if names.isEmpty && roles.isEmpty { return true }
        return Self.isAuthorized(user, by: members)
    }

    /// `couch_db:is_authorized/2`: one of the user's roles listed (or `_admin`), or their name.
    private static func isAuthorized(_ user: UserContext, by group: JSONValue?) -> Bool {
        let roles = Set((group?["roles"]?.arrayValue ?? []).compactMap(\.stringValue) + ["_admin"])
        if user.roles.contains(where: roles.contains) { return true }
        guard let name = user.name else { return false }
        return (group?["names"]?.arrayValue ?? []).contains(.string(name))
    }

    /// The error for a user who is not a member: 401 anonymous, 403 named
    /// (`couch_db:throw_security_error/1`).
    static func notMember(_ user: UserContext) -> CouchError {
        user.name == nil
            ? CouchError(.unauthorized, "unauthorized", "You are not authorized to access this db.")
            : CouchError(.forbidden, "forbidden", "You are not allowed to access this db.")
    }

    /// The error for a user who is not the database's administrator (`couch_db:check_is_admin/1`).
    static func notAdministrator(_ user: UserContext) -> CouchError {
        CouchError(user.name == nil ? .unauthorized : .forbidden, user.name == nil ? "unauthorized" : "forbidden",
                   "You are not a db or server admin.")
    }

    /// `body` checked as `couch_db:validate_security_object/1` checks it.
    init(validating body: JSONValue) throws(CouchError) {
        guard case .object = body else { throw CouchError.badRequest("Request body must be a JSON object") }
        for key in ["admins", "members"] {
            guard let group = body[key] ?? (key == "members" ? body["readers"] : nil) else { continue }
            guard case .object = group else {
                throw CouchError(.internalServerError, "unknown_error", "admins or members must be a JSON list of strings")
            }
            for (member, label) in [("names", "names"), ("roles", "roles")] {
                guard let list = group[member] else { continue }
                guard case .array(let items) = list, items.allSatisfy({ $0.stringValue != nil }) else {
                    throw CouchError(.internalServerError, "unknown_error", "\(label) must be a JSON list of strings")
                }
            }
        }
        json = body
    }

    init(json: JSONValue) { self.json = json }
}

/// Each database's security object, kept in its folder as `security.json`
/// (written atomically), so it goes with the database when it is deleted.
extension DatabaseFolder {
    /// The security object of database `name`: the stored one, or CouchDB's
    /// default (`admin_only`; `{}` for `_users` and `_replicator`, whose
    /// documents have rules of their own).
    /// Read from the file once, then kept in memory (every request asks).
    func security(of name: String) throws -> SecurityObject {
        if let kept = securityObjects.withLock({ $0[name] }) { return kept }
        let file = try directory(of: name).appendingPathComponent("security.json")
        let security: SecurityObject
        if let data = try? Data(contentsOf: file) {
            security = SecurityObject(json: try JSONValue(parsing: String(decoding: data, as: UTF8.self)))
        } else {
            security = SecurityObject(json: Self.systemDatabases.contains(name) ? .object([]) : SecurityObject.adminOnly)
        }
        securityObjects.withLock { $0[name] = security }
        return security
    }

    /// Stores the security object of database `name`.
    func setSecurity(_ security: SecurityObject, of name: String) throws {
        let file = try directory(of: name).appendingPathComponent("security.json")
        try Data(security.json.jsonText.utf8).write(to: file, options: .atomic)
        securityObjects.withLock { $0[name] = security }
    }
}
