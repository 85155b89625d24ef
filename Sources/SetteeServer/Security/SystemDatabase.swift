import Foundation
import HTTPTypes
import Settee

/// `_users` and `_replicator` (and databases named `…/_users`,
/// `…/_replicator`): databases whose documents hold other users' secrets.
///
/// Their rules sit where every path meets, as CouchDB's `before_doc_update`
/// and `after_doc_read` hooks do:
/// - **writes**: the database is opened with the system database's
///   ``DocumentWriteRule`` (``UsersWriteRule``, ``ReplicatorWriteRule``), so
///   every write — JSON, multipart, COPY, bulk, replicated, attachment edits,
///   `_update` results — is checked inside the store, whatever endpoint made it;
/// - **reads**: a request that does not administer the database reaches it
///   only through the few routes ``authorize(_:method:parameters:user:)``
///   allows (a document of its own, a write), every other route (a feed,
///   `_find`, `_bulk_get`, views, COPY, attachments, `_local`, new ones) is
///   refused: a route is closed to them until it is opened here.
enum SystemDatabase: Sendable {
    case users
    case replicator

    /// The system database `name` is, if any: `authenticationDatabase`
    /// (`[chttpd_auth] authentication_db`) is a users database too.
    init?(name: String, authenticationDatabase: String = "_users") {
        if name == "_users" || name.hasSuffix("/_users") || name == authenticationDatabase {
            self = .users
        } else if name == "_replicator" || name.hasSuffix("/_replicator") {
            self = .replicator
        } else {
            return nil
        }
    }

    /// The rule every write of the database passes.
    func writeRule(maximumIterations: Int) -> any DocumentWriteRule {
        switch self {
        case .users: UsersWriteRule(maximumIterations: maximumIterations)
        case .replicator: ReplicatorWriteRule()
        }
    }

    /// Refuses a request of `user`, who does not administer the database,
    /// to any route but those its rules cover: the database's info, a new
    /// document (`POST`), `_bulk_docs`, the security object (read), and its
    /// own documents (GET, HEAD, PUT, DELETE).
    func authorize(_ segments: [String], method: HTTPRequest.Method, parameters: [(name: String, value: String)],
                   user: UserContext) throws(CouchError) {
        let refused = SecurityObject.notAdministrator(user)
        let reading = method == .get || method == .head
        switch segments.count {
        case 1:
            guard reading || method == .post else { throw refused }
        case 2 where segments[1] == "_bulk_docs":
            guard method == .post else { throw refused }
        case 2 where segments[1] == "_security":
            guard reading else { throw refused }
        case 2 where !segments[1].hasPrefix("_"):
            guard reading || method == .put || method == .delete else { throw refused }
            if reading { try authorizeRead(of: segments[1], parameters: parameters, user: user) }
        default:
            if self == .users, segments.count >= 2, segments[1] == "_design", reading {
                throw CouchError(.forbidden, "forbidden", "Only administrators can view design docs in the users database.")
            }
            throw refused
        }
    }

    /// A non-administrator's read of document `id`: in `_users` their own
    /// only (others are `not_found`, as `couch_users_db:after_doc_read`);
    /// in `_replicator` plain reads only, whose body ``afterRead(_:user:)`` strips.
    /// Also what a `DELETE` without a revision passes before it reads
    /// whether the document is there.
    func authorizeRead(of id: String, parameters: [(name: String, value: String)], user: UserContext) throws(CouchError) {
        switch self {
        case .users:
            guard let name = user.name, id == UsersWriteRule.prefix + name else { throw CouchError.missing }
        case .replicator:
            let options = try DocumentReadOptions(parameters)
            if options.changesTheDocument || options.attachments || options.attachmentsSince != nil {
                throw CouchError(.forbidden, "forbidden", "Only administrators read replication documents with options.")
            }
        }
    }

    /// A document as a request that does not administer the database reads
    /// it (`after_doc_read`): another user's replication document without
    /// its credentials (the user name and password of its URLs, its
    /// `headers` and `auth`).
    func afterRead(_ document: JSONValue, user: UserContext) -> JSONValue {
        guard self == .replicator, case .object(var members) = document,
              !(document["_id"]?.stringValue ?? "").hasPrefix("_design/") else { return document }
        if let owner = document["owner"]?.stringValue, owner == user.name { return document }
        for index in members.indices where members[index].key == "source" || members[index].key == "target" {
            members[index].value = Self.strippingCredentials(members[index].value)
        }
        return .object(members)
    }

    /// An endpoint of a replication without credentials (`couch_replicator_docs:strip_credentials/1`).
    static func strippingCredentials(_ endpoint: JSONValue) -> JSONValue {
        switch endpoint {
        case .string(let url):
            guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
                  url[scheme.upperBound..<at].contains(":") else { return endpoint }
            return .string(String(url[..<scheme.upperBound]) + String(url[url.index(after: at)...]))
        case .object(let members):
            var kept = members.filter { $0.key != "headers" && $0.key != "auth" }
            if let index = kept.firstIndex(where: { $0.key == "url" }) { kept[index].value = strippingCredentials(kept[index].value) }
            return .object(kept)
        default:
            return endpoint
        }
    }
}

/// `_replicator`'s rules (`couch_replicator_docs:before_doc_update/3` and
/// `_design/_replicator`'s validation): a replication document belongs to
/// the user named by its `owner`; only its owner, the database's
/// administrators and the `_replicator` role write it.
struct ReplicatorWriteRule: DocumentWriteRule {
    static let otherUsers = "Can't update replication documents from other users."

    func check(_ document: JSONValue, old: JSONValue?, writer: Database.ValidationContext?) throws {
        guard let writer, !writer.isDatabaseAdministrator, !writer.userContext.roles.contains("_replicator") else { return }
        guard let name = writer.userContext.name else {
            throw CouchError(.unauthorized, "unauthorized", "Only authenticated users write replication documents.")
        }
        if let old, old["owner"]?.stringValue != name { throw CouchError(.forbidden, "forbidden", Self.otherUsers) }
        if document["_deleted"] == .bool(true) { return }
        guard document["owner"]?.stringValue == name else { throw CouchError(.forbidden, "forbidden", Self.otherUsers) }
    }

    /// `document` with its `owner` set to the writer when it names none, as
    /// `before_doc_update` sets it.
    static func owned(_ document: JSONValue, user: UserContext) -> JSONValue {
        guard case .object(var members) = document, document["_deleted"] != .bool(true), !user.roles.contains("_replicator"),
              document["owner"] == nil || document["owner"] == .null,
              !(document["_id"]?.stringValue ?? "").hasPrefix("_design/") else { return document }
        members.removeAll { $0.key == "owner" }
        members.append(("owner", user.name.map(JSONValue.string) ?? .null))
        return .object(members)
    }
}
