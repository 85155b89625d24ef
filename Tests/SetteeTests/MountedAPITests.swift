import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Settee
import SetteeServer
import Testing

/// An application's own context, carrying CouchDB's API.
struct MountingAppContext: CouchRequestContext {
    var coreContext: CoreRequestContextStorage
    var couch: CouchContextStorage

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        couch = CouchContextStorage(channel: source.channel)
    }
}

/// CouchDB's API mounted in a Hummingbird application of one's own
/// (`SetteeServer.routes(context:)`), tested in process: the application's
/// routes and the API's answer side by side, and the API's middlewares
/// (authentication, the authorization gate, error bodies) hold under the mount.
@Suite("CouchDB's API mounted in a Hummingbird application")
struct MountedAPITests {
    static let admin = "Basic " + Data("adm:pass".utf8).base64EncodedString()

    func application(_ directory: TemporaryDirectory) throws -> (some ApplicationProtocol, SetteeServer) {
        var configuration = SetteeServer.Configuration(dataDirectory: directory.url)
        configuration.administrators = ["adm": "pass"]
        configuration.passwordIterations = 10
        let settee = try SetteeServer(configuration: configuration, logger: Logger(label: "test"))
        let router = Router(context: MountingAppContext.self)
        router.get("/health") { _, _ in "ok" }
        router.addRoutes(settee.routes(context: MountingAppContext.self), atPath: "/couch")
        let app = Application(router: router, services: [try settee.backgroundService()], logger: Logger(label: "test"))
        return (app, settee)
    }

    @Test("the application's route and the API's side by side; documents written and read under the mount point")
    func mounted() async throws {
        let directory = TemporaryDirectory()
        let (app, _) = try application(directory)
        try await app.test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { #expect(String(buffer: $0.body) == "ok") }
            try await client.execute(uri: "/couch", method: .get) { (response: TestResponse) async throws in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains(#""couchdb":"Welcome""#))
            }
            try await client.execute(uri: "/couch/db", method: .put, headers: [.authorization: Self.admin]) { #expect($0.status == .created) }
            try await client.execute(uri: "/couch/db/a%2Fb", method: .put, headers: [.authorization: Self.admin, .contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"v":1}"#)) { #expect($0.status == .created) }
            try await client.execute(uri: "/couch/db/a%2Fb", method: .get, headers: [.authorization: Self.admin]) { (response: TestResponse) async throws in
                let json = try JSONValue(parsing: String(buffer: response.body))
                #expect(json["_id"] == "a/b" && json["v"] == 1)
                #expect(response.headers[.server]?.hasPrefix("Settee/") == true)
            }
            try await client.execute(uri: "/couch/db/a%2Fb", method: .head, headers: [.authorization: Self.admin]) { (response: TestResponse) async throws in
                #expect(response.status == .ok && response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/couch/_all_dbs", method: .get, headers: [.authorization: Self.admin]) { (response: TestResponse) async throws in
                #expect(try JSONValue(parsing: String(buffer: response.body)).arrayValue?.contains("db") == true)
            }
        }
    }

    @Test("under the mount, authentication, the authorization gate and CouchDB's error bodies are the API's")
    func gate() async throws {
        let directory = TemporaryDirectory()
        let (app, _) = try application(directory)
        try await app.test(.router) { client in
            // Anonymous: no database created, no server administration.
            try await client.execute(uri: "/couch/db", method: .put) { (response: TestResponse) async throws in
                #expect(response.status == .unauthorized)
                #expect(try JSONValue(parsing: String(buffer: response.body))["error"] == "unauthorized")
            }
            // Wrong password: 401 before any route.
            let wrong = "Basic " + Data("adm:nope".utf8).base64EncodedString()
            try await client.execute(uri: "/couch/_all_dbs", method: .get, headers: [.authorization: wrong]) { (response: TestResponse) async throws in
                #expect(response.status == .unauthorized)
                #expect(try JSONValue(parsing: String(buffer: response.body))["reason"] == "Name or password is incorrect.")
            }
            // A user may not make themself an administrator through _users.
            try await client.execute(uri: "/couch/_users", method: .put, headers: [.authorization: Self.admin]) { #expect($0.status == .created) }
            let user = #"{"_id":"org.couchdb.user:eve","name":"eve","type":"user","roles":["_admin"],"password":"x"}"#
            try await client.execute(uri: "/couch/_users/org.couchdb.user:eve", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(string: user)) { (response: TestResponse) async throws in
                #expect(response.status == .forbidden)
            }
            // A missing document is CouchDB's 404 body.
            try await client.execute(uri: "/couch/_users/nothing", method: .get, headers: [.authorization: Self.admin]) { (response: TestResponse) async throws in
                #expect(response.status == .notFound)
                #expect(try JSONValue(parsing: String(buffer: response.body)) == ["error": "not_found", "reason": "missing"])
            }
        }
    }
}
