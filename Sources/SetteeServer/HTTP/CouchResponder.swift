import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Settee

/// Answers every request: authenticates it, routes it by its path as
/// CouchDB's `chttpd` does, and turns errors into CouchDB's error bodies.
struct CouchResponder: HTTPResponder {
    typealias Context = CouchRequestContext

    let databases: DatabaseFolder
    let configuration: SetteeServer.Configuration
    let logger: Logger
    let credentials: ServerCredentials
    /// The replications under way (`/_replicate`, `/_scheduler/jobs`) and the server's UUID.
    let replications: ServerReplications

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        var response: Response
        do {
            let peer = context.channel.remoteAddress?.ipAddress ?? "127.0.0.1"
            let authentication = try await authenticate(request, peer: peer)
            var couch = try CouchRequest(request, user: authentication.user, limits: configuration.limits)
            couch.authenticatedBy = authentication.handler
            couch.peer = peer
            couch.connection = context.channel
            response = try await Disconnection.cancelling(on: context.channel) { try await dispatch(&couch) }
            if let cookie = authentication.refreshedCookie, response.headers[.setCookie] == nil { response.headers[.setCookie] = cookie }
        } catch {
            let couchError = CouchError(from: error)
            if couchError.status == .internalServerError {
                logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            }
            response = CouchResponse.error(couchError)
        }
        response.headers[.server] = CouchResponse.server
        if request.method == .head { response = response.createHeadResponse() }
        if request.method == .connect {
            // The answer goes without a body length: close the connection once it is written.
            response.headers[.connection] = "close"
            let channel = context.channel
            channel.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
        }
        let elapsed = ContinuousClock.now - started
        logger.info("\(request.method) \(request.uri) \(response.status.code) \(elapsed.formatted(.units(allowed: [.milliseconds, .microseconds], width: .narrow)))")
        return response
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
