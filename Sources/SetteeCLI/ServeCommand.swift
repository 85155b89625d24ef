import ArgumentParser
import Foundation
import Logging
import Settee
import SetteeServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve CouchDB's HTTP API over the databases in a folder.",
        discussion: """
            Every subdirectory of --data is one database (PUT /NAME creates one). --admin stores an administrator \
            in DIR/_settee/admins.json, hashed with PBKDF2-SHA-256 as CouchDB does; once one is stored, requests \
            authenticate with Basic auth or an AuthSession cookie (POST /_session), users of the _users database \
            too, and new databases are for administrators until their _security says otherwise. Without any \
            administrator the server accepts every request as an administrator's and binds only loopback \
            addresses: it refuses to start on any other. With -v it logs one line per request on standard error; SIGINT or \
            SIGTERM stops it once the requests under way have finished.
            """)

    @Option(name: .long, help: ArgumentHelp("The folder of databases (created when missing).", valueName: "dir"))
    var data: String

    @Option(name: .long, help: "The address to listen on.")
    var bind = "127.0.0.1"

    @Option(name: .long, help: "The port to listen on (0: any free port, printed at start).")
    var port = 5984

    @Option(name: .long, help: ArgumentHelp("A server administrator to add or update, stored hashed (repeatable).", valueName: "name:password"))
    var admin: [String] = []

    @Flag(name: .long, help: "Mark the AuthSession cookie Secure (HTTPS only), for a server behind a TLS proxy.")
    var secureCookies = false

    @Option(name: .long, help: ArgumentHelp("The AuthSession cookie's SameSite attribute (CouchDB's [chttpd_auth] same_site).",
                                            valueName: "none|lax|strict"))
    var sameSite: String?

    @Option(name: .long, help: ArgumentHelp("The largest limit of a partition query of a view or _all_docs, and the limit of one that gives none "
                                            + "(CouchDB's [query_server_config] partition_query_limit; none by default).", valueName: "rows"))
    var partitionQueryLimit: Int?

    @Flag(name: .shortAndLong, help: "Log every request (at info level).")
    var verbose = false

    func run() async throws {
        let verbose = verbose
        LoggingSystem.bootstrap { label in StandardErrorLogHandler(label: label, level: verbose ? .info : .notice) }
        do {
            var configuration = SetteeServer.Configuration(dataDirectory: URL(fileURLWithPath: data))
            configuration.host = bind
            configuration.port = port
            configuration.secureCookies = secureCookies
            configuration.databaseOptions.partitionQueryLimit = partitionQueryLimit
            if let sameSite {
                guard let value = CookieSameSite(configurationValue: sameSite) else {
                    throw ValidationError("--same-site takes none, lax or strict, not \"\(sameSite)\"")
                }
                configuration.cookieSameSite = value
            }
            for entry in admin {
                guard let colon = entry.firstIndex(of: ":") else {
                    throw ValidationError("--admin takes NAME:PASSWORD")
                }
                configuration.administrators[String(entry[..<colon])] = String(entry[entry.index(after: colon)...])
            }
            let server = try SetteeServer(configuration: configuration, logger: Logger(label: "settee.serve"))
            let host = configuration.host
            try await server.run { port in
                printLine(["ok": true, "listening": .string("http://\(host):\(port)/")])
            }
        } catch let error as ValidationError {
            throw error
        } catch let error as CouchError {
            printError(error.json.jsonText)
            throw ExitCode(1)
        } catch {
            ErrorReport.print(error)
            throw ExitCode(1)
        }
    }
}
