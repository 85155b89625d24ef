import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Settee
import SetteeServer
import HTTPTypes

/// A `settee serve` running in this process on a free loopback port, over
/// a temporary folder, for one test; stopped with ``stop()``.
final class RunningServer: Sendable {
    let directory: URL
    let port: Int
    let server: SetteeServer
    private let task: Task<Void, any Error>

    /// The server's base URL (`http://127.0.0.1:PORT`).
    var base: String { "http://127.0.0.1:\(port)" }

    /// Starts a server; `configure` adjusts its configuration (administrators, limits).
    /// `directory` and `port` serve a folder again on the port it was served on (a restart).
    init(directory: URL? = nil, port: Int = 0, configure: (inout SetteeServer.Configuration) -> Void = { _ in }) async throws {
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("settee-serve-\(UUID().uuidString)")
        var configuration = SetteeServer.Configuration(dataDirectory: self.directory)
        configuration.port = port
        configuration.databaseOptions.javaScriptWorkers = 1
        configuration.passwordIterations = 10   // PBKDF2 at CouchDB's 600,000 is slow in a debug build
        configure(&configuration)
        var logger = Logger(label: "settee.serve.test")
        logger.logLevel = .critical
        let server = try SetteeServer(configuration: configuration, logger: logger)
        self.server = server
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        task = Task {
            defer { portSink.finish() }   // a server that fails to start ends the wait for its port
            try await server.run { port in portSink.yield(port); portSink.finish() }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await task.value
            throw CouchError(.internalServerError, "not_started", "the server did not start")
        }
        self.port = port
    }

    /// Stops the server (requests under way finish) and removes its folder.
    func stop() async {
        await stopKeepingFolder()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server, leaving its folder for another server to serve
    /// (a data folder is served by one server at a time).
    func stopKeepingFolder() async {
        await server.stop()
        _ = try? await task.value
    }

    /// A response: status, headers and body.
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
        /// The body as JSON.
        var json: JSONValue { (try? JSONValue(parsing: String(decoding: body, as: UTF8.self))) ?? .null }
        /// A header, by name in any letter case.
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    /// A session that neither keeps nor sends cookies: tests send them explicitly.
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        return URLSession(configuration: configuration)
    }()

    /// Sends a request; `path` starts with `/` and may hold a query string.
    func request(_ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:],
                 user: (name: String, password: String)? = nil) async throws -> Reply {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.httpBody = body
        if body != nil, headers["Content-Type"] == nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let user {
            let token = Data("\(user.name):\(user.password)".utf8).base64EncodedString()
            request.setValue("Basic \(token)", forHTTPHeaderField: "Authorization")
        }
        let (data, response) = try await Self.session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields["\(name)"] = "\(value)" }
        return Reply(status: http.statusCode, headers: fields, body: data)
    }

    /// Sends a request with a JSON body.
    func request(_ method: String, _ path: String, json: JSONValue, headers: [String: String] = [:],
                 user: (name: String, password: String)? = nil) async throws -> Reply {
        try await request(method, path, body: Data(json.jsonText.utf8), headers: headers, user: user)
    }
}
