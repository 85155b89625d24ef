import SetteeCore
import SetteeStorage

extension Database {
    /// Who writes, as `validate_doc_update(newDoc, oldDoc, userCtx, secObj)`
    /// sees it: the `userCtx` and the `secObj` of one request.
    ///
    /// A server speaking for many users binds one around each request's writes;
    /// without one, the functions see ``Options/userContext`` and `{}`.
    ///
    /// ```swift
    /// let context = Database.ValidationContext(userContext: UserContext(name: "bob", roles: ["staff"]),
    ///                                          securityObject: security)
    /// try await Database.$validationContext.withValue(context) {
    ///     try await db.put(#"{"_id": "note"}"#)   // validated as bob's
    /// }
    /// ```
    public struct ValidationContext: Sendable, Equatable {
        /// The writer (`userCtx`, without `db`: the database's name is added).
        public var userContext: UserContext
        /// The database's security object (`secObj`), `{}` when it has none.
        public var securityObject: JSONValue

        /// A writer and the database's security object.
        public init(userContext: UserContext, securityObject: JSONValue = .object([])) {
            self.userContext = userContext
            self.securityObject = securityObject
        }

        /// Whether the writer administers the database: a server
        /// administrator (role `_admin`) or one the security object's
        /// `admins` name by name or role (`couch_db:is_admin/1`). Only they
        /// write design documents.
        public var isDatabaseAdministrator: Bool {
            let admins = securityObject["admins"]
            let roles = Set((admins?["roles"]?.arrayValue ?? []).compactMap(\.stringValue) + ["_admin"])
            if userContext.roles.contains(where: roles.contains) { return true }
            guard let name = userContext.name else { return false }
            return (admins?["names"]?.arrayValue ?? []).contains(.string(name))
        }
    }

    /// The writer of the writes made in this task (and carried by the async
    /// forms to the queue they run on); `nil` for ``Options/userContext``.
    @TaskLocal public static var validationContext: ValidationContext?
}
