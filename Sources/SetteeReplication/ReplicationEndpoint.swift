public import Foundation
public import Settee

/// One end of a replication: a database opened in this process, or a
/// database of a CouchDB server (Apache CouchDB, `settee serve`, or any
/// server that speaks CouchDB's replication protocol).
public enum ReplicationEndpoint: Sendable, CustomStringConvertible {
    /// A database opened in this process.
    case local(Database)
    /// A database on a CouchDB server.
    case remote(RemoteDatabase)

    /// The endpoint named by `text`: an `http://` or `https://` URL is a
    /// remote database (credentials in the URL, or `username`/`password`),
    /// anything else the folder of a local database, opened (and created
    /// when `creating`) with `options`.
    public static func named(_ text: String, username: String? = nil, password: String? = nil,
                             creating: Bool = false, options: Database.Options = Database.Options()) throws -> ReplicationEndpoint {
        let lowered = text.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            return .remote(try RemoteDatabase(text, username: username, password: password))
        }
        var options = options
        options.createIfMissing = creating
        return .local(try Database(at: URL(fileURLWithPath: text), options: options))
    }

    /// The endpoint as messages name it: a folder's path, or a URL without
    /// its credentials.
    public var description: String {
        switch self {
        case .local(let database): return database.url.path
        case .remote(let remote): return remote.description
        }
    }
}

/// A database on a CouchDB server, by its URL, with the credentials sent to
/// it (HTTP Basic authentication). The credentials never appear in
/// ``description``, messages or logs.
public struct RemoteDatabase: Sendable, CustomStringConvertible {
    /// The database's URL without credentials, ending in `/`.
    public let url: URL
    /// The user name sent, when there is one.
    public let username: String?
    let password: String?

    /// A database at `urlText` (`http://host:5984/db`). Credentials written
    /// into the URL (`http://name:secret@host/db`, percent-encoded) are taken
    /// out of it; `username` and `password` given here win over them.
    /// - Throws: ``ReplicationError/invalidEndpoint(_:)`` when the text is
    ///   not an http(s) URL naming a database.
    public init(_ urlText: String, username: String? = nil, password: String? = nil) throws {
        guard var components = URLComponents(string: urlText),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty else {
            throw ReplicationError.invalidEndpoint("\(Self.withoutCredentials(urlText)) is not an http(s) URL of a database")
        }
        let urlUser = components.percentEncodedUser?.removingPercentEncoding
        let urlPassword = components.percentEncodedPassword?.removingPercentEncoding
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        if !components.percentEncodedPath.hasSuffix("/") { components.percentEncodedPath += "/" }
        guard components.percentEncodedPath.count > 1, let url = components.url else {
            throw ReplicationError.invalidEndpoint("\(Self.withoutCredentials(urlText)) names no database (http://host:port/DATABASE)")
        }
        self.url = url
        self.username = username ?? (urlUser?.isEmpty == false ? urlUser : nil)
        self.password = password ?? urlPassword
    }

    /// The server's URL (the database's without its path).
    var serverURL: URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.percentEncodedPath = "/"
        return components.url!
    }

    public var description: String { url.absoluteString }

    /// `text` with anything between `//` and `@` replaced, for messages.
    static func withoutCredentials(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") else { return text }
        return String(text[..<scheme.upperBound]) + "***@" + text[text.index(after: at)...]
    }
}
