public import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import Hummingbird
public import Logging
import ServiceLifecycle
public import Settee
import Synchronization
import UnixSignals

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
        /// Server administrators to add, name → password: stored hashed in
        /// `DIR/_settee/admins.json` with those stored before. Without any
        /// (given or stored), every request is an administrator's ("admin
        /// party") and the server binds loopback only.
        public var administrators: [String: String] = [:]
        /// PBKDF2 iterations for new password hashes (CouchDB 3.5's
        /// `[chttpd_auth] iterations`, 600,000).
        public var passwordIterations = 600_000
        /// The most PBKDF2 iterations a stored password hash may ask of a
        /// login (1,000,000, or ``passwordIterations`` when higher): a
        /// `_users` document asking more is refused on write, and its
        /// user's logins with `forbidden`, so nobody can plant a hash that
        /// costs the server minutes per login attempt.
        public var maximumPasswordIterations = 1_000_000
        /// How long an `AuthSession` cookie lasts, in seconds (CouchDB's
        /// `[chttpd_auth] timeout`, 600).
        public var sessionTimeout = 600
        /// The wall clock the server reads for sessions: the time an
        /// `AuthSession` cookie is stamped with, and its expiry and refresh
        /// (the system clock by default; a test moves its own instead of waiting).
        public var now: @Sendable () -> Date = { Date() }
        /// Whether the `AuthSession` cookie is marked `Secure`, so that
        /// browsers send it over HTTPS only. CouchDB marks it so when it
        /// serves HTTPS itself; `settee serve` speaks plain HTTP, so set this
        /// when a TLS proxy serves it to browsers (`false` by default).
        public var secureCookies = false
        /// The `AuthSession` cookie's `SameSite` attribute (CouchDB's
        /// `[chttpd_auth] same_site`); `nil`, the default, sends none.
        public var cookieSameSite: CookieSameSite?
        /// How long a connection may stay idle before it is closed (60 seconds).
        public var idleTimeout: Duration = .seconds(60)
        /// How long a client may take to send a request's line and headers,
        /// from its first byte, before the connection is closed (30 seconds,
        /// as mochiweb gives CouchDB's clients): a client that sends a head
        /// slowly, or only part of one, does not hold a connection for long.
        public var headerTimeout: Duration = .seconds(30)
        /// How many threads of the server's own run its connections and
        /// request handlers when none is held by a long database call (at
        /// least 2, or one per processor core); 0 runs them on Swift's
        /// cooperative pool instead.
        ///
        /// A handler's database calls run on its own thread (no hand-off to
        /// another thread and back); a call that runs for more than a few
        /// milliseconds (an index build, a full scan) has its thread replaced
        /// while requests wait, so that long calls never hold short ones.
        ///
        /// With threads of its own, a server keeps answering while the
        /// process's other tasks hold every thread of the cooperative pool
        /// (which has one thread per core): a server embedded in an app, or
        /// in a test process, is not starved by the app's synchronous work.
        /// Tasks a handler creates with `Task {}` or `Task.detached` run on
        /// the cooperative pool as usual.
        public var requestThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)
        /// How long a stop (SIGTERM, SIGINT, ``SetteeServer/stop()``) waits
        /// for the requests under way before it cancels them (10 seconds): a
        /// cancelled request's database work (a scan, an index build,
        /// JavaScript) stops at its next check, so the process ends soon
        /// after, whatever its clients asked.
        public var shutdownTimeout: Duration = .seconds(10)
        /// Limits on requests.
        public var limits = ServerLimits()
        /// Options for every database opened; earlier revisions are kept
        /// until `_compact`, as CouchDB keeps them
        /// (`Database.Options.keepsEarlierRevisions`).
        public var databaseOptions = Database.Options()

        /// A server of the databases in `dataDirectory`.
        public init(dataDirectory: URL) {
            self.dataDirectory = dataDirectory
            databaseOptions.keepsEarlierRevisions = true
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// The databases served.
    public let databases: DatabaseFolder
    let logger: Logger
    /// The administrators' hashes and the cookie secret.
    let credentials: ServerCredentials
    /// The replications the server runs, and its UUID.
    let replications: ServerReplications
    /// The configuration `/_node/{node}/_config` shows and changes.
    let config: ServerConfig
    /// New document ids and `/_uuids`.
    let uuids = UUIDGenerator()
    /// The running service group, for ``stop()``.
    private let running = RunningGroup()

    /// A server of `configuration.dataDirectory`.
    /// - Throws: `CouchError` when the address is not loopback and no
    ///   administrator is configured; errors creating the folder.
    public init(configuration: Configuration, logger: Logger = Logger(label: "settee.serve")) throws {
        let credentials = try ServerCredentials(dataDirectory: configuration.dataDirectory, configured: configuration.administrators,
                                                iterations: configuration.passwordIterations,
                                                maximumIterations: configuration.maximumPasswordIterations)
        guard credentials.hasAdministrators || Self.isLoopback(configuration.host) else {
            throw CouchError(.internalServerError, "insecure_bind",
                             "refusing to serve \(configuration.host) without an administrator: pass --admin NAME:PASSWORD or bind 127.0.0.1")
        }
        self.configuration = configuration
        self.logger = logger
        self.credentials = credentials
        config = try ServerConfig(defaults: ServerSettings(configuration), values: ServerSettings.sections(of: configuration),
                                  file: credentials.folder.appendingPathComponent("local.ini"))
        var options = configuration.databaseOptions
        // The databases take max_document_size as it is at start; requests check it as it is then.
        options.maximumDocumentBytes = min(options.maximumDocumentBytes, config.settings.limits.maximumDocumentBytes)
        self.databases = try DatabaseFolder(url: configuration.dataDirectory, options: options, logger: logger,
                                            maximumPasswordIterations: credentials.maximumIterations)
        let users = config.settings.authenticationDatabase
        databases.setAuthenticationDatabase(users)
        AuthDesignDocument.ensure(in: users, of: databases, logger: logger)
        self.replications = try ServerReplications(dataDirectory: configuration.dataDirectory, databases: databases,
                                                   credentials: credentials, logger: logger)
        let removed = UploadFolder.removeLeftovers(in: configuration.dataDirectory)
        if removed > 0 { logger.notice("removed \(removed) attachment uploads left unfinished") }
    }

    /// Whether `host` names only this machine.
    /// Addresses are read as addresses (`127.0.0.0/8`, `::1`), never as
    /// names that merely start like one (`127.example.com`).
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1 }
        }
        return false
    }

    /// Serves until SIGINT or SIGTERM or ``stop()``; requests under way
    /// finish, then the databases close. `onRunning` is called with the
    /// port once listening. The application is the API behind its
    /// middlewares (every method on every path), with
    /// ``backgroundService()`` beside it.
    ///
    /// - Throws: `data_folder_in_use` when another server (in this process
    ///   or another) serves the same data folder.
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let background = try backgroundService()
        let app = Application(
            responder: responder(context: BasicCouchRequestContext.self),
            server: HeaderTimedHTTP1Channel.builder(idleTimeout: configuration.idleTimeout, headerTimeout: configuration.headerTimeout),
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: nil),
            onServerRunning: { [config] channel in
                config.listening(on: channel.localAddress?.port ?? 0)
                await onRunning(channel.localAddress?.port ?? 0)
            },
            logger: logger)
        // Shut down in reverse: the application first (requests under way finish), then what runs beside it.
        var groupConfiguration = ServiceGroupConfiguration(services: [background, app], gracefulShutdownSignals: [.sigterm, .sigint],
                                                           logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        let group = ServiceGroup(configuration: groupConfiguration)
        if running.start(group) { await group.triggerGracefulShutdown() }
        if #available(macOS 15.0, *), configuration.requestThreads > 0 {
            // Connections are child tasks of the group's: they, and the handlers they run, prefer these threads.
            let threads = RequestThreads(count: configuration.requestThreads)
            defer { threads.shutdown() }
            try await withTaskExecutorPreference(threads) { try await group.run() }
        } else {
            try await group.run()
        }
    }

    /// Stops a running server as SIGTERM does: it stops accepting
    /// connections, the requests under way finish, then ``run(onRunning:)``
    /// closes the databases and returns. Stopping before it runs makes it
    /// return at once.
    public func stop() async {
        if let group = running.stop() { await group.triggerGracefulShutdown() }
    }
}

/// The service group of a running server, or a stop asked for before it ran.
private final class RunningGroup: Sendable {
    private let state = Mutex<(group: ServiceGroup?, stopped: Bool)>((nil, false))

    /// Records `group`; whether a stop was already asked for.
    func start(_ group: ServiceGroup) -> Bool {
        state.withLock { state in
            state.group = group
            return state.stopped
        }
    }

    /// Records a stop; the group to shut down, if running.
    func stop() -> ServiceGroup? {
        state.withLock { state in
            state.stopped = true
            return state.group
        }
    }
}
