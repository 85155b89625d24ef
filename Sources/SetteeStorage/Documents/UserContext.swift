package import SetteeCore
/// Who is writing, as CouchDB's `validate_doc_update` functions see it: their
/// third argument, `userCtx` (`{"db": …, "name": …, "roles": […]}`).
///
/// An embedded database's owner writes as an administrator by default
/// (``administrator``); give ``Database/Options/userContext`` another value
/// to have validation functions check a user's name and roles.
public struct UserContext: Sendable, Equatable {
    /// The user's name, or `nil` for an anonymous writer.
    public var name: String?
    /// The user's roles (`_admin` for an administrator).
    public var roles: [String]

    public init(name: String? = nil, roles: [String] = []) {
        self.name = name
        self.roles = roles
    }

    /// An administrator with no name: `{"name": null, "roles": ["_admin"]}`.
    public static let administrator = UserContext(name: nil, roles: ["_admin"])

    /// `userCtx` as JSON, for the database named `database`.
    package func json(database: String) -> JSONValue {
        .object([
            (key: "db", value: .string(database)),
            (key: "name", value: name.map(JSONValue.string) ?? .null),
            (key: "roles", value: .array(roles.map(JSONValue.string))),
        ])
    }
}
