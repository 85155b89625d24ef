import ArgumentParser
import Logging
import Settee

/// `settee couchjs`: Apache CouchDB's JavaScript query server, on Settee's engine.
struct CouchJSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "couchjs",
        abstract: "Serve CouchDB's query-server protocol on standard input and output.",
        discussion: """
            A drop-in replacement for CouchDB's couchjs: point CouchDB at it with \
            COUCHDB_QUERY_SERVER_JAVASCRIPT="/path/to/settee couchjs". Exits with 0 at the end of input \
            and 255 after a fatal error, as couchjs does.
            """)

    @Argument(help: "Accepted and ignored, so this can stand where CouchDB runs `couchjs main.js`.")
    var script: String?

    func run() throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let logger = Logger(label: "settee.couchjs")
        let worker = try JavaScriptWorker(configuration: JavaScriptConfiguration())
        let status = try worker.run { context in
            try QueryServer(context: context, transport: FileDescriptorTransport(), logger: logger).run()
        }
        if status != 0 { throw ExitCode(status) }
    }
}
