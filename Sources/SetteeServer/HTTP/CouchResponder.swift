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

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        var response: Response
        do {
            let user = try authenticate(request)
            var couch = try CouchRequest(request, user: user, limits: configuration.limits)
            response = try await route(&couch)
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

    /// The user a request speaks for: an administrator by Basic auth, or
    /// anyone (an administrator too) when the server has no administrators.
    func authenticate(_ request: Request) throws(CouchError) -> UserContext {
        if configuration.administrators.isEmpty { return .administrator }
        guard let authorization = request.headers[.authorization] else { return UserContext() }
        guard authorization.lowercased().hasPrefix("basic "),
              let data = Data(base64Encoded: String(authorization.dropFirst(6))),
              let pair = String(data: data, encoding: .utf8), let colon = pair.firstIndex(of: ":") else {
            throw CouchError(.unauthorized, "unauthorized", "Name or password is incorrect.")
        }
        let name = String(pair[..<colon]), password = String(pair[pair.index(after: colon)...])
        guard configuration.administrators[name] == password else {
            throw CouchError(.unauthorized, "unauthorized", "Name or password is incorrect.")
        }
        return UserContext(name: name, roles: ["_admin"])
    }

    /// Routes by the first segments, as `chttpd` does.
    func route(_ request: inout CouchRequest) async throws -> Response {
        let segments = request.segments
        guard let first = segments.first else { return try welcome(request) }
        if first.hasPrefix("_"), !DatabaseFolder.systemDatabases.contains(first) {
            return try await serverEndpoint(first, &request)
        }
        guard request.user.roles.contains("_admin") else {
            throw CouchError(.unauthorized, "unauthorized", "You are not authorized to access this db.")
        }
        if segments.count == 1 { return try await databaseEndpoint(first, &request) }
        let second = segments[1]
        switch second {
        case "_all_docs", "_bulk_docs", "_bulk_get", "_changes", "_purge", "_compact", "_security", "_revs_limit",
             "_find", "_explain", "_index", "_ensure_full_commit", "_view_cleanup":
            return try await databaseOperation(first, second, &request)
        case "_design":
            guard segments.count >= 3 else { throw CouchError.missing }
            return try await designEndpoint(first, designName: segments[2], rest: Array(segments.dropFirst(3)), &request)
        case "_local":
            guard segments.count == 3 else { throw CouchError.missing }
            return try await documentEndpoint(first, id: "_local/" + segments[2], &request)
        default:
            if segments.count == 2 { return try await documentEndpoint(first, id: second, &request) }
            throw CouchError(.notFound, "not_found", "Document is missing attachment")
        }
    }
}
