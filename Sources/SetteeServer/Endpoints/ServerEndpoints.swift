import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `GET /`, `/_up`, `/_all_dbs`, `/_uuids`, `/_session`.
extension CouchAPI {
    func welcome(_ request: CouchRequest) throws -> Response {
        try allow(request, "GET,HEAD")
        return CouchResponse.json([
            "couchdb": "Welcome",
            "version": "3.5.0",
            "uuid": .string(replications.serverUUID),
            "vendor": ["name": "Settee", "version": .string(SetteeServer.version)],
            "features": ["access-ready"],
        ])
    }

    func serverEndpoint(_ name: String, _ request: inout CouchRequest) async throws -> Response {
        switch name {
        case "_up":
            try allow(request, "GET,HEAD")
            return CouchResponse.json(["status": "ok", "seeds": [:]])
        case "_all_dbs":
            try allow(request, "GET,HEAD")
            try requireAdministrator(request)
            var names = try databases.names()
            let descending = try request.flag("descending")
            if descending { names.reverse() }
            // The keys are JSON strings, compared with names byte by byte, as CouchDB's `_dbs` orders them.
            let query = request
            func key(_ names: String...) throws -> [UInt8]? {
                guard let text = names.compactMap({ query.parameter($0) }).first else { return nil }
                guard case .string(let key)? = try? CouchRequest.json(Array(text.utf8)) else {
                    throw CouchError.badRequest("Invalid value for `\(names[0])`: \(text.prefix(100)) is not a JSON string")
                }
                return Array(key.utf8)
            }
            func before(_ a: [UInt8], _ b: [UInt8]) -> Bool { descending ? b.lexicographicallyPrecedes(a) : a.lexicographicallyPrecedes(b) }
            if let start = try key("start_key", "startkey") { names.removeAll { before(Array($0.utf8), start) } }
            if let end = try key("end_key", "endkey") {
                let inclusive = try request.flag("inclusive_end", default: true)
                names.removeAll { before(end, Array($0.utf8)) || (!inclusive && Array($0.utf8) == end) }
            }
            if let skip = request.parameter("skip").flatMap(Int.init) { names = Array(names.dropFirst(max(0, skip))) }
            if let limit = request.parameter("limit").flatMap(Int.init) { names = Array(names.prefix(max(0, limit))) }
            return CouchResponse.json(.array(names.map(JSONValue.string)))
        case "_uuids":
            try allow(request, "GET,HEAD")
            let count = request.parameter("count").flatMap(Int.init) ?? 1
            guard count >= 0, count <= 1000 else {
                throw CouchError(.badRequest, "bad_request", "count parameter too large")
            }
            let ids = uuids.next(count, by: config.settings.uuidAlgorithm)
            // Never cached: every answer is new ids (CouchDB's headers, with an ETag of its own).
            return CouchResponse.json(["uuids": .array(ids.map(JSONValue.string))],
                                      headers: [.cacheControl: "no-cache", HTTPField.Name("Pragma")!: "no-cache",
                                                .eTag: "\"\(PasswordHash.randomHex(16))\"", .expires: "Mon, 01 Jan 1990 00:00:00 GMT"])
        case "_session":
            return try await sessionEndpoint(&request)
        case "_active_tasks":
            return try activeTasksEndpoint(request)
        case "_membership":
            return try membershipEndpoint(request)
        case "_node":
            return try await nodeEndpoint(&request)
        case "_replicate":
            return try await replicateEndpoint(&request)
        case "_scheduler":
            return try await schedulerEndpoint(&request)
        default:
            throw CouchError(.badRequest, "illegal_database_name",
                             "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
        }
    }

    /// A new document id, by `[uuids] algorithm`.
    func newDocumentID() -> String {
        uuids.next(1, by: config.settings.uuidAlgorithm)[0]
    }

    /// 32 random hexadecimal digits (a multipart boundary, a file name, a request's `uuid`).
    static func newUUID() -> String {
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// Refuses a method the endpoint does not serve (405, CouchDB's words).
    func allow(_ request: CouchRequest, _ methods: String) throws(CouchError) {
        let allowed = methods.split(separator: ",").map(String.init)
        guard allowed.contains(request.method.rawValue) else { throw CouchError.methodNotAllowed(methods) }
    }

    func requireAdministrator(_ request: CouchRequest) throws(CouchError) {
        guard request.user.roles.contains("_admin") else {
            throw CouchError(.unauthorized, "unauthorized", "You are not a server admin.")
        }
    }
}
