import Foundation
import Logging
import Settee
import SetteeReplication
import HTTPTypes

/// A replication as a `_replicate` body or a `_replicator` document
/// describes it (CouchDB's `couch_replicator_parse`): its endpoints — this
/// server's databases by name, or URLs with credentials in them, in
/// `auth.basic` or in an `Authorization` header — its options, and its id.
struct ReplicationRequest {
    let replicator: Replicator
    let id: String

    /// Reads a `_replicate` body or `_replicator` document. `localNames`:
    /// whether a database may be named without a URL (opened in place,
    /// past HTTP's authorization: for administrators only).
    init(_ body: JSONValue, databases: DatabaseFolder, serverUUID: String, logger: Logger, localNames: Bool = true) throws {
        var options = ReplicationOptions()
        options.serverUUID = serverUUID
        func flag(_ name: String) throws -> Bool {
            switch body[name] {
            case nil, .null?: return false
            case .bool(let value)?: return value
            default: throw CouchError.badRequest("parameter `\(name)` must be a boolean")
            }
        }
        options.continuous = try flag("continuous")
        options.createTarget = try flag("create_target")
        if body["use_checkpoints"] == .bool(false) { options.useCheckpoints = false }
        if case .number(let size, _)? = body["worker_batch_size"], size >= 1, size <= 10_000 { options.batchSize = Int(size) }
        if case .number(let milliseconds, _)? = body["checkpoint_interval"], milliseconds >= 0, milliseconds < 1e9 {
            options.checkpointInterval = milliseconds / 1000
        }
        if let since = body["since_seq"], since != .null { options.sinceSequence = since }
        var filters = 0
        switch body["doc_ids"] {
        case nil, .null?: break
        case .array(let ids)?:
            let strings = ids.compactMap(\.stringValue)
            guard strings.count == ids.count else { throw CouchError.badRequest("parameter `doc_ids` must be an array of strings") }
            options.filter = .documentIDs(strings)
            filters += 1
        default: throw CouchError.badRequest("parameter `doc_ids` must be an array")
        }
        switch body["selector"] {
        case nil, .null?: break
        case .object?:
            options.filter = .selector(body["selector"]!)
            filters += 1
        default: throw CouchError.badRequest("parameter `selector` must be a JSON object")
        }
        switch body["filter"] {
        case nil, .null?: break
        case .string(let name)?:
            var parameters: [String: String] = [:]
            if case .object(let members)? = body["query_params"] {
                for (key, value) in members { parameters[key] = value.stringValue ?? value.exactJSONText }
            }
            options.filter = .function(name, queryParameters: parameters)
            filters += 1
        default: throw CouchError.badRequest("parameter `filter` must be a string")
        }
        guard filters <= 1 else { throw CouchError.badRequest("`selector`, `filter` and `doc_ids` are mutually exclusive") }
        let source = try Self.endpoint(body["source"], "source", creating: false, databases: databases, localNames: localNames)
        let target = try Self.endpoint(body["target"], "target", creating: options.createTarget, databases: databases, localNames: localNames)
        let replicator = Replicator(source: source, target: target, options: options, logger: logger)
        self.replicator = replicator
        do {
            // A filter function's source enters the id only once the running replication reads it.
            id = try Replicator.replicationID(source: source, target: target, options: options,
                                              filterSource: { if case .function = options.filter { "" } else { nil } }())
        } catch let error as ReplicationError {
            throw CouchAPI.couchError(error)
        }
    }

    /// An endpoint of a `_replicate` body: a database of this server by
    /// name, or a URL (a string, or `{"url", "headers", "auth"}`).
    private static func endpoint(_ value: JSONValue?, _ role: String, creating: Bool, databases: DatabaseFolder,
                                 localNames: Bool) throws -> ReplicationEndpoint {
        var url: String?
        var username: String?, password: String?
        switch value {
        case .string(let text)?:
            url = text
        case .object?:
            url = value?["url"]?.stringValue
            if let basic = value?["auth"]?["basic"] {
                username = basic["username"]?.stringValue
                password = basic["password"]?.stringValue
            } else if case .object(let headers)? = value?["headers"],
                      let authorization = headers.first(where: { $0.key.lowercased() == "authorization" })?.value.stringValue,
                      authorization.lowercased().hasPrefix("basic "),
                      let decoded = Data(base64Encoded: String(authorization.dropFirst(6))).map({ String(decoding: $0, as: UTF8.self) }),
                      let colon = decoded.firstIndex(of: ":") {
                username = String(decoded[..<colon])
                password = String(decoded[decoded.index(after: colon)...])
            }
        default:
            break
        }
        guard let url, !url.isEmpty else { throw CouchError.badRequest("Missing or invalid `\(role)` database") }
        let lowered = url.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            do {
                return .remote(try RemoteDatabase(url, username: username, password: password))
            } catch let error as ReplicationError {
                throw CouchAPI.couchError(error)
            }
        }
        guard localNames else {
            throw CouchError(.forbidden, "forbidden", "`\(role)` must be a URL: only administrators replicate this server's databases by name")
        }
        let name = url.removingPercentEncoding ?? url
        guard DatabaseFolder.isValidName(name) || DatabaseFolder.systemDatabases.contains(name) else { throw DatabaseFolder.illegalName(name) }
        if databases.exists(name) { return .local(try databases.database(name)) }
        guard creating else { throw CouchError(.notFound, "db_not_found", "could not open \(name)") }
        return .local(try databases.create(name))
    }
}
