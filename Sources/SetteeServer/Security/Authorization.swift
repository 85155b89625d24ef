import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// Which requests a user may make, as `chttpd_auth_request` and
/// `couch_db:check_is_member/1` decide: server-administrator-only
/// endpoints, database-administrator-only ones, and members-only databases.
extension CouchAPI {
    static func notServerAdministrator() -> CouchError {
        CouchError(.unauthorized, "unauthorized", "You are not a server admin.")
    }

    /// Refuses what `request.user` may not do; returns the security object
    /// of the database it addresses (`nil` for server endpoints and
    /// databases that do not exist, which answer for themselves).
    func authorize(_ request: CouchRequest) throws -> SecurityObject? {
        let segments = request.segments, user = request.user, method = request.method
        guard let first = segments.first else { return nil }
        let isServerAdministrator = user.roles.contains("_admin")
        func requireServerAdministrator() throws(CouchError) {
            if !isServerAdministrator { throw Self.notServerAdministrator() }
        }
        let second = segments.count > 1 ? segments[1] : nil
        switch first {
        case "_all_dbs", "_dbs_info":
            try requireServerAdministrator()   // `admin_only_all_dbs = true`
            return nil
        case _ where databases.systemDatabase(first) != nil:
            if segments.count == 1 && (method == .put || method == .delete) { try requireServerAdministrator() }
            if second == "_all_docs" || second == "_changes" || second == "_purge" || second == "_purged_infos_limit" {
                try requireServerAdministrator()
            }
        case "_up", "_uuids", "_session":
            return nil
        case _ where first.hasPrefix("_"):
            try requireServerAdministrator()
            return nil
        default:
            if segments.count == 1 && (method == .put || method == .delete) { try requireServerAdministrator() }
            if second == "_purge" || second == "_purged_infos_limit" { try requireServerAdministrator() }
        }
        guard databases.exists(first) else { return nil }
        let security = try databases.security(of: first)
        if second == "_compact" || second == "_view_cleanup",
           !security.isAdministrator(user) {
            throw CouchError(.unauthorized, "unauthorized", "You are not a server or db admin.")
        }
        guard security.isMember(user) else { throw SecurityObject.notMember(user) }
        if second == "_security" && method != .get && method != .head && !security.isAdministrator(user) {
            throw SecurityObject.notAdministrator(user)
        }
        // The system databases' read gate: routes closed to non-administrators unless opened there.
        if let system = databases.systemDatabase(first), !security.isAdministrator(user) {
            try system.authorize(segments, method: method, parameters: request.parameters, user: user)
        }
        return security
    }

    /// `GET` and `PUT /{db}/_security`.
    func securityEndpoint(_ name: String, _ request: inout CouchRequest) async throws -> Response {
        try allow(request, "GET,HEAD,PUT")
        guard databases.exists(name) else { throw CouchError.databaseMissing }
        if request.method == .put {
            let security = try SecurityObject(validating: try await request.jsonObjectBody())
            try databases.setSecurity(security, of: name)
            return CouchResponse.ok()
        }
        return CouchResponse.json(try databases.security(of: name).json)
    }
}
