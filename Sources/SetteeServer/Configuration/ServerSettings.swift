import Foundation
import HTTPTypes

/// The configuration values Settee applies, read from ``ServerConfig``'s
/// sections and checked there: a value one of them cannot take is refused.
struct ServerSettings: Sendable {
    /// `[chttpd] max_http_request_size`, `[couchdb] max_document_size`.
    var limits: ServerLimits
    /// `[chttpd_auth] timeout` (or `[couch_httpd_auth] timeout`), seconds.
    var sessionTimeout: Int
    /// `[uuids] algorithm` and `utc_id_suffix`.
    var uuidAlgorithm: UUIDGenerator.Algorithm
    /// `[chttpd] decode_plus_to_space`: whether a `+` in a path is a space (CouchDB's default).
    var decodePlusToSpace = true
    /// `[chttpd_auth] authentication_db` (or `[couch_httpd_auth]`): where users log in from.
    var authenticationDatabase = "_users"
    /// `[chttpd_auth] iterations`: PBKDF2 iterations for new password hashes.
    var passwordIterations: Int
    /// The most iterations a hash may ask (``SetteeServer/Configuration/maximumPasswordIterations``).
    let maximumPasswordIterations: Int
    /// `[couch_httpd_auth] password_regexp` (or `[chttpd_auth]`).
    var passwordRules = PasswordRules.none
    /// `[chttpd_auth] upgrade_hash_on_auth`: a login rehashes a password stored with other iterations.
    var upgradeHashOnAuth = false

    /// The settings of `configuration`.
    init(_ configuration: SetteeServer.Configuration) {
        limits = configuration.limits
        sessionTimeout = configuration.sessionTimeout
        uuidAlgorithm = .sequential
        passwordIterations = configuration.passwordIterations
        maximumPasswordIterations = max(configuration.maximumPasswordIterations, configuration.passwordIterations)
    }

    /// `defaults` with the values of `sections` applied.
    /// - Throws: `CouchError` (400) naming the section and key whose value is not one the setting takes.
    init(_ defaults: ServerSettings, applying sections: [String: [String: String]]) throws(CouchError) {
        self = defaults
        func integer(_ section: String, _ key: String, minimum: Int) throws(CouchError) -> Int? {
            guard let text = sections[section]?[key] else { return nil }
            guard let value = Int(text), value >= minimum else {
                throw CouchError.badRequest("[\(section)] \(key) must be an integer of at least \(minimum), not \(text.prefix(40))")
            }
            return value
        }
        if let value = try integer("chttpd", "max_http_request_size", minimum: 1) { limits.maximumRequestBytes = value }
        if let value = try integer("couchdb", "max_document_size", minimum: 1) { limits.maximumDocumentBytes = value }
        // CouchDB 3 reads [chttpd_auth] first, then the older [couch_httpd_auth].
        if let value = try integer("couch_httpd_auth", "timeout", minimum: 1) { sessionTimeout = value }
        if let value = try integer("chttpd_auth", "timeout", minimum: 1) { sessionTimeout = value }
        if let value = try integer("chttpd_auth", "iterations", minimum: 1) {
            guard value <= maximumPasswordIterations else {
                throw CouchError.badRequest("[chttpd_auth] iterations must be at most \(maximumPasswordIterations), the most a login may cost")
            }
            passwordIterations = value
        }
        for section in ["chttpd_auth", "couch_httpd_auth"] {
            if let name = sections[section]?["authentication_db"] {
                guard DatabaseFolder.isValidName(name) else { throw DatabaseFolder.illegalName(name) }
                authenticationDatabase = name
                break
            }
        }
        switch sections["chttpd_auth"]?["upgrade_hash_on_auth"] {
        case nil, "false": upgradeHashOnAuth = false
        case "true": upgradeHashOnAuth = true
        case let other?: throw CouchError.badRequest("[chttpd_auth] upgrade_hash_on_auth must be true or false, not \(other.prefix(40))")
        }
        passwordRules = PasswordRules(sections["couch_httpd_auth"]?["password_regexp"] ?? sections["chttpd_auth"]?["password_regexp"])
        switch sections["chttpd"]?["decode_plus_to_space"] {
        case nil: break
        case "true": decodePlusToSpace = true
        case "false": decodePlusToSpace = false
        case let other?: throw CouchError.badRequest("[chttpd] decode_plus_to_space must be true or false, not \(other.prefix(40))")
        }
        let suffix = sections["uuids"]?["utc_id_suffix"] ?? ""
        switch sections["uuids"]?["algorithm"] {
        case nil: break
        case "random": uuidAlgorithm = .random
        case "sequential": uuidAlgorithm = .sequential
        case "utc_random": uuidAlgorithm = .utcRandom
        case "utc_id": uuidAlgorithm = .utcID(suffix: suffix)
        case let other?:
            throw CouchError.badRequest("[uuids] algorithm must be random, sequential, utc_random or utc_id, not \(other.prefix(40))")
        }
    }

    /// The sections and keys of `configuration`, as `_config` shows them.
    static func sections(of configuration: SetteeServer.Configuration) -> [String: [String: String]] {
        [
            "couchdb": [
                "database_dir": configuration.dataDirectory.path,
                "view_index_dir": configuration.dataDirectory.path,
                "max_document_size": String(configuration.limits.maximumDocumentBytes),
                "single_node": "true",
            ],
            "chttpd": [
                "bind_address": configuration.host,
                "port": String(configuration.port),
                "max_http_request_size": String(configuration.limits.maximumRequestBytes),
                "decode_plus_to_space": "true",
            ],
            "chttpd_auth": [
                "timeout": String(configuration.sessionTimeout),
                "iterations": String(configuration.passwordIterations),
                "allow_persistent_cookies": "true",
            ],
            "uuids": ["algorithm": "sequential"],
            "vendor": ["name": "Settee", "version": SetteeServer.version],
        ]
    }
}
