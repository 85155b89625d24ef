import Foundation
import HTTPTypes
import Synchronization

/// The server's configuration as CouchDB's `/_node/{node}/_config` API shows
/// and changes it: sections of named string values.
///
/// The values are the server's ``SetteeServer/Configuration`` written in
/// CouchDB's sections and keys (`[chttpd] port`, `[couchdb]
/// max_document_size`, `[chttpd_auth] timeout`, `[uuids] algorithm`, …),
/// overlaid with what was set through the API: those are kept in
/// `DIR/_settee/local.ini` (unless the request says `X-Couch-Persist:
/// false`) and read again at the next start, as CouchDB keeps its
/// `local.ini`. The settings Settee applies (``ServerSettings``) take effect
/// on the next request; a value one of them cannot take is refused, and
/// nothing is changed. Other keys are kept and shown, as CouchDB keeps keys
/// it has no use for. Administrators (`[admins]`) are kept by
/// ``ServerCredentials``, hashed on write.
final class ServerConfig: Sendable {
    /// The node name `/_membership` lists and `/_node/{node}` accepts (with `_local`).
    static let nodeName = "settee@127.0.0.1"

    /// Sections the API may not change (CouchDB's `?BLACKLIST_CONFIG_SECTIONS`):
    /// they would run programs or load code.
    static let lockedSections: Set<String> = [
        "daemons", "external", "httpd_design_handlers", "httpd_db_handlers", "httpd_global_handlers",
        "native_query_servers", "os_daemons", "query_servers", "feature_flags",
    ]

    private struct State {
        /// The defaults' values, under the file's.
        var base: [String: [String: String]]
        /// Every value: the defaults, then the file's, then the API's.
        var values: [String: [String: String]]
        /// What the file holds.
        var stored: [String: [String: String]]
        var settings: ServerSettings
    }

    /// `DIR/_settee/local.ini`; nil keeps nothing.
    private let file: URL?
    private let defaults: ServerSettings
    private let state: Mutex<State>

    /// The configuration of a server whose settings are `defaults`, with the
    /// values of `file` (when it exists) over them.
    /// - Throws: `CouchError` for a file that does not read as an ini file,
    ///   or holds a value a setting cannot take (naming the file, section and key).
    init(defaults: ServerSettings, values: [String: [String: String]], file: URL?) throws {
        self.file = file
        self.defaults = defaults
        state = Mutex(try Self.read(file, over: values, defaults: defaults))
    }

    /// Records the port the server listens on (`[chttpd] port`), known once it listens.
    func listening(on port: Int) {
        state.withLock { state in
            state.base["chttpd", default: [:]]["port"] = String(port)
            if state.stored["chttpd"]?["port"] == nil { state.values["chttpd", default: [:]]["port"] = String(port) }
        }
    }

    /// Reads the file again, as at start: what was set without being kept is gone.
    /// - Throws: `CouchError` as ``init(defaults:values:file:)`` (nothing changes then).
    func reload() throws {
        try state.withLock { state in state = try Self.read(file, over: state.base, defaults: defaults) }
    }

    private static func read(_ file: URL?, over values: [String: [String: String]], defaults: ServerSettings) throws -> State {
        var stored: [String: [String: String]] = [:]
        if let file, let text = try? String(contentsOf: file, encoding: .utf8) {
            stored = try IniFile.parse(text, file: file.path)
        }
        var merged = values
        for (section, members) in stored {
            for (key, value) in members { merged[section, default: [:]][key] = value }
        }
        do {
            return State(base: values, values: merged, stored: stored, settings: try ServerSettings(defaults, applying: merged))
        } catch {
            throw CouchError(.internalServerError, "invalid_config", "\(file?.path ?? "configuration"): \(error.reason)")
        }
    }

    /// The settings in effect.
    var settings: ServerSettings { state.withLock { $0.settings } }

    /// Every section.
    var sections: [String: [String: String]] { state.withLock { $0.values } }

    /// One section's values (empty when there is none).
    func section(_ name: String) -> [String: String] { state.withLock { $0.values[name] ?? [:] } }

    /// One value.
    func value(_ section: String, _ key: String) -> String? { state.withLock { $0.values[section]?[key] } }

    /// Sets `section`/`key` to `value` (kept in the file when `persist`);
    /// returns the value it had, or nil.
    /// - Throws: `CouchError`: 403 for a locked section, 400 for a name or
    ///   value that cannot be kept or a value a setting cannot take (nothing
    ///   changes then).
    @discardableResult
    func set(_ section: String, _ key: String, to value: String, persist: Bool) throws(CouchError) -> String? {
        try checkWritable(section, key)
        guard !value.contains(where: \.isNewline) else { throw CouchError.badRequest("Invalid configuration value") }
        return try change(section, key, persist: persist) { $0 = value }
    }

    /// Removes `section`/`key` (from the file too when `persist`); returns the value it had, or nil when it had none.
    /// - Throws: `CouchError` as ``set(_:_:to:persist:)``.
    func remove(_ section: String, _ key: String, persist: Bool) throws(CouchError) -> String? {
        try checkWritable(section, key)
        return try change(section, key, persist: persist) { $0 = nil }
    }

    private func change(_ section: String, _ key: String, persist: Bool, _ edit: (inout String?) -> Void) throws(CouchError) -> String? {
        try state.withLock { state throws(CouchError) -> String? in
            var values = state.values
            let previous = values[section]?[key]
            edit(&values[section, default: [:]][key])
            if values[section]?.isEmpty == true { values[section] = nil }
            let settings = try ServerSettings(defaults, applying: values)
            if persist, let file {
                var stored = state.stored
                edit(&stored[section, default: [:]][key])
                if stored[section]?.isEmpty == true { stored[section] = nil }
                do {
                    try Data(IniFile.text(stored).utf8).write(to: file, options: .atomic)
                } catch {
                    throw CouchError(.internalServerError, "file_error", "could not write \(file.path): \(error.localizedDescription)")
                }
                state.stored = stored
            }
            state.values = values
            state.settings = settings
            return previous
        }
    }

    /// Refuses a locked section, or names the file cannot hold. (`[chttpd]
    /// config_whitelist` restricts nothing, as in CouchDB 3, which no longer reads it.)
    private func checkWritable(_ section: String, _ key: String) throws(CouchError) {
        if Self.lockedSections.contains(section) {
            throw CouchError(.forbidden, "forbidden", "Config section blacklisted for modification over HTTP API.")
        }
        guard !section.isEmpty, !key.isEmpty, !section.contains(where: { $0.isNewline || $0 == "]" }),
              !key.contains(where: { $0.isNewline || $0 == "=" }), !key.hasPrefix(";"), !key.hasPrefix("[") else {
            throw CouchError.badRequest("Invalid configuration key: \(section)/\(key)")
        }
    }
}
