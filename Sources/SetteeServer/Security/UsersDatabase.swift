import Foundation
import SetteeCore
import HTTPTypes
import Settee

/// The `_users` database's rules (`couch_users_db` and its `_design/_auth`
/// validation): anyone may sign up, a user reads and writes only their own
/// `org.couchdb.user:NAME` document, only administrators set roles, and a
/// `password` is never stored: it is hashed into `derived_key` and `salt`.
extension CouchResponder {
    static let userPrefix = "org.couchdb.user:"

    /// Refuses a non-administrator's read of another user's document or of
    /// a design document (`couch_users_db:after_doc_read/2`).
    func authorizeUsersDocumentRead(_ id: String, user: UserContext, method: HTTPRequest.Method) throws(CouchError) {
        guard method == .get || method == .head else { return }
        if id.hasPrefix("_design/") {
            throw CouchError(.forbidden, "forbidden", "Only administrators can view design docs in the users database.")
        }
        if id.hasPrefix("_local/") { return }
        guard let name = user.name, id == Self.userPrefix + name else { throw CouchError.missing }
    }

    /// `document`, about to be written to database `database` by `user`, as
    /// `_users` stores it; any other database's documents are returned as they are.
    /// - Throws: CouchDB's `not_found` for another user's document, `forbidden`
    ///   with `_design/_auth`'s words for a document it refuses.
    func usersDocument(_ document: JSONValue, database: String, user: UserContext) async throws -> JSONValue {
        guard database == "_users", let id = document["_id"]?.stringValue,
              !id.hasPrefix("_design/"), !id.hasPrefix("_local/") else { return document }
        let db = try databases.database(database)
        let security = try databases.security(of: database)
        let isAdministrator = security.isAdministrator(user)
        let old = try await db.document(id).map { try $0.value }
        // couch_users_db:before_doc_update/3
        if !isAdministrator, let name = user.name, id != Self.userPrefix + name { throw CouchError.missing }
        try Self.checkUserDocument(document, old: old, user: user, isAdministrator: isAdministrator)
        return Self.hashingPassword(in: document, iterations: credentials.iterations)
    }

    /// `_bulk_docs`' documents for `_users`, each as ``usersDocument(_:database:user:)``
    /// makes it, and the result rows of those it refuses, by position
    /// (`{"id", "error", "reason"}`, as CouchDB answers them): the others are written.
    func usersDocuments(_ documents: [JSONValue], request: CouchRequest) async throws -> (documents: [JSONValue], refused: [Int: JSONValue]) {
        guard request.segments.first == "_users" else { return (documents, [:]) }
        var prepared: [JSONValue] = []
        var refused: [Int: JSONValue] = [:]
        for (index, var document) in documents.enumerated() {
            if case .object = document, document["_id"] == nil {
                document = Self.setting("_id", to: .string(Self.newUUID()), in: document)
            }
            do {
                prepared.append(try await usersDocument(document, database: "_users", user: request.user))
            } catch let error as CouchError {
                refused[index] = ["id": document["_id"] ?? .null, "error": .string(error.error), "reason": .string(error.reason)]
                prepared.append(document)
            }
        }
        return (prepared, refused)
    }

    /// `_design/_auth`'s `validate_doc_update`, in Swift.
    static func checkUserDocument(_ new: JSONValue, old: JSONValue?, user: UserContext, isAdministrator: Bool) throws(CouchError) {
        func forbidden(_ reason: String) -> CouchError { CouchError(.forbidden, "forbidden", reason) }
        if new["_deleted"] == .bool(true) {
            if user.roles.contains("_admin") || (old?["name"]?.stringValue).map({ $0 == user.name }) == true { return }
            throw forbidden("Only admins may delete other user docs.")
        }
        guard new["type"] == .string("user") else { throw forbidden("doc.type must be user") }
        guard let name = new["name"]?.stringValue, !name.isEmpty else { throw forbidden("doc.name is required") }
        guard let rolesValue = new["roles"], rolesValue != .null else { throw forbidden("doc.roles must exist") }
        guard case .array(let roleValues) = rolesValue else { throw forbidden("doc.roles must be an array") }
        let roles = roleValues.compactMap(\.stringValue)
        guard roles.count == roleValues.count else { throw forbidden("doc.roles can only contain strings") }
        guard new["_id"]?.stringValue == userPrefix + name else {
            throw forbidden("Doc ID must be of the form org.couchdb.user:name")
        }
        if let old, old["name"]?.stringValue != name { throw forbidden("Usernames can not be changed.") }
        if !isAdministrator {
            if let old {
                guard user.name == name else { throw forbidden("You may only update your own user document.") }
                let oldRoles = (old["roles"]?.arrayValue ?? []).compactMap(\.stringValue).sorted()
                guard oldRoles == roles.sorted() else { throw forbidden("Only _admin may edit roles") }
            } else if !roles.isEmpty {
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
    static func hashingPassword(in document: JSONValue, iterations: Int) -> JSONValue {
        guard case .object(let members) = document, let password = document["password"]?.stringValue else { return document }
        let passwordFields: Set<String> = ["derived_key", "iterations", "password", "password_scheme", "password_sha",
                                           "preserve_salt", "pbkdf2_prf", "salt"]
        let hash = BlockingWork.run { PasswordHash(hashing: password, iterations: iterations) }
        let special = members.filter { $0.key == "_id" || $0.key == "_rev" }
        let rest = members.filter { !passwordFields.contains($0.key) && $0.key != "_id" && $0.key != "_rev" }
        return .object(special + hash.userDocumentMembers + rest)
    }
}
