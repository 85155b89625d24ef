import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Settee

/// `settee serve`: CouchDB 3.5's HTTP API over the Settee databases in one
/// folder, so that CouchDB's client libraries, `curl` and PouchDB can use them.
///
/// ```swift
/// let server = try SetteeServer(configuration: .init(dataDirectory: folder))
/// try await server.run()          // until SIGINT or SIGTERM
/// ```
public struct SetteeServer: Sendable {
    /// Settee's version, as `GET /` reports it.
    public static let version = "0.1.0"

    /// Where and how the server listens.
    public struct Configuration: Sendable {
        /// The folder holding one database per subdirectory.
        public var dataDirectory: URL
        /// The address to bind (`127.0.0.1` by default).
        public var host = "127.0.0.1"
        /// The port (CouchDB's 5984 by default; 0 picks a free one).
        public var port = 5984
        /// Server administrators, name → password. Without any, every request is
        /// an administrator's and the server binds loopback only.
        public var administrators: [String: String] = [:]
        /// Limits on requests.
        public var limits = ServerLimits()
        /// Options for every database opened.
        public var databaseOptions = Database.Options()

        /// A server of the databases in `dataDirectory`.
        public init(dataDirectory: URL) {
            self.dataDirectory = dataDirectory
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// The databases served.
    public let databases: DatabaseFolder
    let logger: Logger

    /// A server of `configuration.dataDirectory`.
    /// - Throws: `CouchError` when the address is not loopback and no
    ///   administrator is configured; errors creating the folder.
    public init(configuration: Configuration, logger: Logger = Logger(label: "settee.serve")) throws {
        guard !configuration.administrators.isEmpty || Self.isLoopback(configuration.host) else {
            throw CouchError(.internalServerError, "insecure_bind",
                             "refusing to serve \(configuration.host) without an administrator: pass --admin NAME:PASSWORD or bind 127.0.0.1")
        }
        self.configuration = configuration
        self.logger = logger
        self.databases = try DatabaseFolder(url: configuration.dataDirectory, options: configuration.databaseOptions, logger: logger)
    }

    /// Whether `host` names only this machine.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// The responder that answers requests (CouchDB's API).
    var responder: CouchResponder {
        CouchResponder(databases: databases, configuration: configuration, logger: logger)
    }

    /// Serves until SIGINT or SIGTERM; requests under way finish, then the
    /// databases close. `onRunning` is called with the port once listening.
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: nil),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
        defer { databases.closeAll() }
        try await app.runService()
    }
}
