import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Settee
import SetteeCore

/// `/_membership` and `/_node/{node}/…`: the one node of a Settee server,
/// named ``ServerConfig/nodeName`` or `_local`, with its configuration
/// (`_config`) and versions. Server administrators only (``authorize(_:)``).
extension CouchAPI {
    func membershipEndpoint(_ request: CouchRequest) throws -> Response {
        try allow(request, "GET,HEAD")
        let nodes: JSONValue = [.string(ServerConfig.nodeName)]
        return CouchResponse.json(["all_nodes": nodes, "cluster_nodes": nodes])
    }

    func nodeEndpoint(_ request: inout CouchRequest) async throws -> Response {
        let segments = request.segments
        guard segments.count >= 2 else { throw CouchError.missing }
        guard segments[1] == "_local" || segments[1] == ServerConfig.nodeName else {
            throw CouchError(.notFound, "not_found", "no such node: \(segments[1])")
        }
        let rest = Array(segments.dropFirst(2))
        switch rest.first {
        case nil:
            try allow(request, "GET,HEAD")
            return CouchResponse.json(["name": .string(ServerConfig.nodeName)])
        case "_versions":
            try allow(request, "GET,HEAD")
            let collation = CollationVersions.current
            return CouchResponse.json([
                "javascript_engine": ["name": "spidermonkey", "version": "102"],
                "collation_driver": [
                    "name": "libicu", "library_version": .string(collation.library),
                    "collator_version": .string(collation.collator), "collation_algorithm_version": .string(collation.algorithm),
                ],
                "settee": ["version": .string(SetteeServer.version)],
            ])
        case "_config":
            return try await configEndpoint(Array(rest.dropFirst()), &request)
        default:
            throw CouchError.missing
        }
    }

    /// `GET /_node/{node}/_config[/{section}[/{key}]]`, `PUT` and `DELETE`
    /// of a key, `POST …/_config/_reload`, as `chttpd_node` answers them.
    private func configEndpoint(_ path: [String], _ request: inout CouchRequest) async throws -> Response {
        switch path.count {
        case 0:
            try allow(request, "GET,HEAD")
            var sections = config.sections
            sections["admins"] = credentials.administratorForms
            return CouchResponse.json(.object(sections.sorted { $0.key < $1.key }.filter { !$0.value.isEmpty }.map { ($0.key, Self.json($0.value)) }))
        case 1 where path[0] == "_reload":
            try allow(request, "POST")
            try config.reload()
            return CouchResponse.ok()
        case 1:
            try allow(request, "GET,HEAD")
            return CouchResponse.json(Self.json(path[0] == "admins" ? credentials.administratorForms : config.section(path[0])))
        case 2:
            let (section, key) = (path[0], path[1])
            try allow(request, "GET,HEAD,PUT,DELETE")
            let persist = request.header(HTTPField.Name("X-Couch-Persist")!)?.lowercased() != "false"
            let before = config.settings
            defer { settingsChanged(from: before) }
            switch request.method {
            case .put:
                guard case .string(let text) = try await request.jsonBody() else { throw CouchError.badRequest("a JSON string expected") }
                let value = text.trimmingCharacters(in: .whitespaces)
                let previous = section == "admins"
                    ? try setAdministrator(key, value, persist: persist)
                    : try config.set(section, key, to: value, persist: persist)
                return CouchResponse.json(.string(previous ?? ""))
            case .delete:
                let previous = section == "admins"
                    ? try removeAdministrator(key, persist: persist)
                    : try config.remove(section, key, persist: persist)
                guard let previous else { throw Self.unknownConfigValue }
                return CouchResponse.json(.string(previous))
            default:
                let value = section == "admins" ? credentials.administrator(key)?.administratorForm : config.value(section, key)
                guard let value else { throw Self.unknownConfigValue }
                return CouchResponse.json(.string(value))
            }
        default:
            throw CouchError.missing
        }
    }

    /// What a change of settings does beyond them: a new authentication
    /// database gets the users databases' rules at once, and `_design/_auth`
    /// when a users database is next created or the server starts (CouchDB
    /// writes it a moment later too: a client may write first).
    private func settingsChanged(from before: ServerSettings) {
        let users = config.settings.authenticationDatabase
        if users != before.authenticationDatabase { databases.setAuthenticationDatabase(users) }
    }

    private static let unknownConfigValue = CouchError(.notFound, "not_found", "unknown_config_value")

    private static func json(_ values: [String: String]) -> JSONValue {
        .object(values.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
    }

    /// `PUT /_node/{node}/_config/admins/{name}`: a password is stored hashed
    /// (with `[chttpd_auth] iterations`), a hash (`-pbkdf2:sha256-…`) as it is.
    private func setAdministrator(_ name: String, _ value: String, persist: Bool) throws -> String? {
        guard !name.isEmpty, !value.isEmpty else { throw CouchError.badRequest("An administrator needs a name and a password") }
        let hash: PasswordHash
        if value.hasPrefix("-") {
            guard let stored = PasswordHash(administratorForm: value) else {
                throw CouchError.badRequest("\(value.prefix(12))… is not a password hash Settee reads: -pbkdf2:sha256-KEY,SALT,ITERATIONS")
            }
            hash = stored
        } else {
            let iterations = config.settings.passwordIterations
            hash = BlockingWork.run { PasswordHash(hashing: value, iterations: iterations) }
        }
        return try credentials.setAdministrator(name, hash, persist: persist)?.administratorForm
    }

    /// `DELETE /_node/{node}/_config/admins/{name}`; the last administrator
    /// of a server that listens beyond this machine stays (the server would
    /// be open to anyone).
    private func removeAdministrator(_ name: String, persist: Bool) throws -> String? {
        guard credentials.administrator(name) != nil else { return nil }
        if credentials.administratorForms.count == 1, !SetteeServer.isLoopback(configuration.host) {
            throw CouchError(.forbidden, "forbidden",
                             "\(name) is the last administrator of a server listening on \(configuration.host): without one, every client would be an administrator")
        }
        return try credentials.removeAdministrator(name, persist: persist)?.administratorForm
    }
}
