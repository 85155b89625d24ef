import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Settee

/// CouchDB's API over the databases of one folder: routes a request by its
/// path as CouchDB's `chttpd` does, after the one gate every request passes
/// (``dispatch(_:)``). Its endpoints are its extensions, a file per group.
///
/// It answers behind four middlewares: request logging, JSONP, CouchDB's error
/// bodies, authentication (`SetteeServer.responder(context:)` for `settee
/// serve`, ``SetteeServer/routes(context:)`` to mount).
struct CouchAPI: Sendable {
    let databases: DatabaseFolder
    let configuration: SetteeServer.Configuration
    let logger: Logger
    let credentials: ServerCredentials
    /// The replications under way (`/_replicate`, `/_scheduler/jobs`) and the server's UUID.
    let replications: ServerReplications
    /// The configuration (`/_node/{node}/_config`), whose settings apply from the next request.
    let config: ServerConfig
    /// New document ids and `/_uuids`, by `[uuids] algorithm`.
    let uuids: UUIDGenerator

    /// Answers `request`, which the authentication middleware has
    /// authenticated, cancelled should its client go; `mountDepth` path
    /// segments (where an application mounted the API) are not the API's.
    func respond(to request: Request, couch context: CouchContextStorage, mountDepth: Int = 0) async throws -> Response {
        guard let authentication = context.authentication else {
            throw CouchError(.internalServerError, "no_authentication", "the CouchDB API answers behind its authentication middleware")
        }
        let settings = config.settings
        var couch = try CouchRequest(request, user: authentication.user, limits: settings.limits, plusIsSpace: settings.decodePlusToSpace)
        if mountDepth > 0 { couch.segments.removeFirst(min(mountDepth, couch.segments.count)) }
        couch.authenticatedBy = authentication.handler
        couch.peer = context.peer
        couch.connection = context.channel
        return try await Disconnection.cancelling(on: context.channel) { try await dispatch(&couch) }
    }

    /// Authorizes the request (``authorize(_:)``), then routes it with its
    /// writer bound for every write it makes (`userCtx` and `secObj`, which
    /// the databases' write rules and `validate_doc_update` see). Every
    /// request passes here: a rewritten one again, as itself.
    func dispatch(_ couch: inout CouchRequest) async throws -> Response {
        let security = try authorize(couch)
        couch.securityObject = security?.json ?? [:]
        couch.isDatabaseAdministrator = security?.isAdministrator(couch.user) ?? couch.user.roles.contains("_admin")
        let writer = Database.ValidationContext(userContext: couch.user, securityObject: security?.json ?? .object([]))
        return try await Database.$validationContext.withValue(writer) { try await route(&couch) }
    }

    /// Routes by the first segments, as `chttpd` does.
    func route(_ request: inout CouchRequest) async throws -> Response {
        let segments = request.segments
        guard let first = segments.first else { return try welcome(request) }
        if first.hasPrefix("_"), !DatabaseFolder.systemDatabases.contains(first) {
            return try await serverEndpoint(first, &request)
        }
        if segments.count == 1 { return try await databaseEndpoint(first, &request) }
        let second = segments[1]
        switch second {
        case "_security": return try await securityEndpoint(first, &request)
        case "_partition": return try await partitionEndpoint(first, &request)
        case _ where CouchRoutes.databaseOperations.contains(second):
            return try await databaseOperation(first, second, &request)
        case "_design":
            guard segments.count >= 3 else { throw CouchError.missing }
            return try await designEndpoint(first, designName: segments[2], rest: Array(segments.dropFirst(3)), &request)
        case "_local":
            guard segments.count == 3 else { throw CouchError.missing }
            return try await documentEndpoint(first, id: "_local/" + segments[2], &request)
        default:
            if segments.count == 2 { return try await documentEndpoint(first, id: second, &request) }
            return try await attachmentEndpoint(first, id: second, attachment: segments.dropFirst(2).joined(separator: "/"), &request)
        }
    }
}
