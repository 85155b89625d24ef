import Foundation
import SetteeCore
import HTTPTypes
import Settee

/// The `_users` database's rules (`couch_users_db` and its `_design/_auth`
/// validation): anyone may sign up, a user reads and writes only their own
/// `org.couchdb.user:NAME` document, only administrators set roles, and a
/// `password` is never stored: it is hashed into `derived_key` and `salt`.
///
/// The database is opened with this rule, so that every write passes it
/// inside the store, whatever endpoint made it; endpoints hash a `password`
/// before they write (``CouchAPI/preparedForWrite(_:database:request:)``),
/// and a write that still holds one is refused.
struct UsersWriteRule: DocumentWriteRule {
    static let prefix = "org.couchdb.user:"
    /// The most PBKDF2 iterations a stored hash may ask of a login.
    let maximumIterations: Int

    func check(_ document: JSONValue, old: JSONValue?, writer: Database.ValidationContext?) throws {
        guard let writer else { return }
        let user = writer.userContext, isAdministrator = writer.isDatabaseAdministrator
        let id = document["_id"]?.stringValue ?? ""
        try Self.checkWriter(of: id, user: user, isAdministrator: isAdministrator)
        try CouchAPI.checkUserDocument(document, old: old, user: user, isAdministrator: isAdministrator)
        if document["_deleted"] == .bool(true) { return }
        if document["password"] != nil {
            throw CouchError(.forbidden, "forbidden",
                             "\(id): a password is stored only hashed, and this write reached the database with it in clear")
        }
        try PasswordHash.checkStored(document, maximumIterations: maximumIterations)
    }

    /// `couch_users_db:before_doc_update/3`: a non-administrator signs up
    /// anonymously or writes their own document; another's is `not_found`.
    static func checkWriter(of id: String, user: UserContext, isAdministrator: Bool) throws(CouchError) {
        if !isAdministrator, let name = user.name, id != prefix + name { throw CouchError.missing }
    }
}

extension CouchAPI {
    static var userPrefix: String { UsersWriteRule.prefix }

    /// `document`, about to be written to database `database` for `request`,
    /// as the database's rules store it: in `_users` its `password` hashed
    /// (and CouchDB's refusals said before the hashing's cost), in
    /// `_replicator` its `owner` set; other databases' documents are returned
    /// as they are. Every write path of the server calls this; the rules
    /// themselves are checked again inside the write (``SystemDatabase``).
    func preparedForWrite(_ document: JSONValue, database: String, request: CouchRequest) async throws -> JSONValue {
        guard let system = databases.systemDatabase(database), case .object = document,
              let id = document["_id"]?.stringValue, !id.hasPrefix("_design/"), !id.hasPrefix("_local/") else { return document }
        let user = request.user
        switch system {
        case .replicator:
            return ReplicatorWriteRule.owned(document, user: user)
        case .users:
            let old = try await databases.database(database).document(id).map { try $0.value }
            try UsersWriteRule.checkWriter(of: id, user: user, isAdministrator: request.isDatabaseAdministrator)
            try Self.checkUserDocument(document, old: old, user: user, isAdministrator: request.isDatabaseAdministrator)
            let settings = config.settings
            if let password = document["password"]?.stringValue { try settings.passwordRules.check(password) }
            return Self.hashingPassword(in: document, iterations: settings.passwordIterations)
        }
    }

    /// `_bulk_docs`' documents, each as ``preparedForWrite(_:database:request:)``
    /// makes it, and the result rows of those it refuses, by position
    /// (`{"id", "error", "reason"}`, as CouchDB answers them): the others are written.
    func preparedForWrite(_ documents: [JSONValue], database: String,
                          request: CouchRequest) async throws -> (documents: [JSONValue], refused: [Int: JSONValue]) {
        guard databases.systemDatabase(database) != nil else { return (documents, [:]) }
        var prepared: [JSONValue] = []
        var refused: [Int: JSONValue] = [:]
        for (index, var document) in documents.enumerated() {
            if case .object = document, document["_id"] == nil {
                document = Self.setting("_id", to: .string(newDocumentID()), in: document)
            }
            do {
                prepared.append(try await preparedForWrite(document, database: database, request: request))
            } catch let error as CouchError {
                refused[index] = ["id": document["_id"] ?? .null, "error": .string(error.error), "reason": .string(error.reason)]
                prepared.append(document)
            }
        }
        return (prepared, refused)
    }

    /// The rules of `_design/_auth`'s `validate_doc_update` that guard
    /// accounts, checked in Swift on every write of a users database: only
    /// administrators delete another's document, set or change roles, and
    /// no role is a system one, no name starts with `_` or holds `:`.
    /// CouchDB checks them only once the database holds `_design/_auth`
    /// (written a moment after it becomes a users database); Settee from
    /// the first write. The document's shape (`type`, `name`, `roles` an
    /// array of strings, the id `org.couchdb.user:NAME`, a name that does not
    /// change) is `_design/_auth`'s to check, as in CouchDB.
    static func checkUserDocument(_ new: JSONValue, old: JSONValue?, user: UserContext, isAdministrator: Bool) throws(CouchError) {
        func forbidden(_ reason: String) -> CouchError { CouchError(.forbidden, "forbidden", reason) }
        if new["_deleted"] == .bool(true) {
            if user.roles.contains("_admin") || (old?["name"]?.stringValue).map({ $0 == user.name }) == true { return }
            throw forbidden("Only admins may delete other user docs.")
        }
        let name = new["name"]?.stringValue ?? ""
        let roles = (new["roles"]?.arrayValue ?? []).compactMap(\.stringValue)
        if !isAdministrator {
            if let old {
                guard user.name == name else { throw forbidden("You may only update your own user document.") }
                let oldRoles = (old["roles"]?.arrayValue ?? []).compactMap(\.stringValue).sorted()
                guard oldRoles == roles.sorted(), (new["roles"]?.arrayValue?.count ?? 0) == roles.count else {
                    throw forbidden("Only _admin may edit roles")
                }
            } else if !(new["roles"]?.arrayValue ?? []).isEmpty {
                throw forbidden("Only _admin may set roles")
            }
        }
        if roles.contains(where: { $0 != "_metrics" && $0.hasPrefix("_") }) {
            throw forbidden("No system roles (starting with underscore) in users db.")
        }
        if name.hasPrefix("_") { throw forbidden("Username may not start with underscore.") }
        if name.contains(":") { throw forbidden("Character `:` is not allowed in usernames.") }
    }

    /// The document with its `password` replaced by a PBKDF2 hash
    /// (`couch_users_db:save_doc/1`); unchanged without a `password`.
    static func hashingPassword(in document: JSONValue, iterations: Int, salt: String? = nil) -> JSONValue {
        guard case .object(let members) = document, let password = document["password"]?.stringValue else { return document }
        let passwordFields: Set<String> = ["derived_key", "iterations", "password", "password_scheme", "password_sha",
                                           "preserve_salt", "pbkdf2_prf", "salt"]
        let hash = BlockingWork.run { salt.map { PasswordHash(hashing: password, iterations: iterations, salt: $0) } ?? PasswordHash(hashing: password, iterations: iterations) }
        let special = members.filter { $0.key == "_id" || $0.key == "_rev" }
        let rest = members.filter { !passwordFields.contains($0.key) && $0.key != "_id" && $0.key != "_rev" }
        return .object(special + hash.userDocumentMembers + rest)
    }
}
