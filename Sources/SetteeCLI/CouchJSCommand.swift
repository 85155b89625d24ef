import ArgumentParser
import Logging
import Settee
import SetteeQueryServer
import SetteeJavaScript

/// `settee couchjs`: Apache CouchDB's JavaScript query server, on Settee's engine.
struct CouchJSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "couchjs",
        abstract: "Serve CouchDB's query-server protocol on standard input and output.",
        discussion: """
            A drop-in replacement for CouchDB's couchjs: point CouchDB at it with \
            COUCHDB_QUERY_SERVER_JAVASCRIPT="/path/to/settee couchjs". It takes couchjs's options; \
            script arguments (main.js) are accepted and ignored. Exits with 0 at the end of input, \
            255 after a fatal error and 1 when out of memory, as couchjs does.
            """)

    @Option(name: .customShort("S"), help: "The most bytes the engine's heap may take (couchjs's default: 64 MiB).")
    var heapBytes: Int = 64 << 20

    @Flag(name: .customLong("eval"), help: "Allow eval and new Function (blocked by default, as in CouchDB).")
    var allowsEval = false

    @Flag(name: .customShort("V"), help: "Show the version and exit.")
    var version = false

    @Argument(help: "Accepted and ignored, so this can stand where CouchDB runs `couchjs main.js`.")
    var scripts: [String] = []

    func validate() throws {
        guard heapBytes > 0 else { throw ValidationError("-S must be a positive number of bytes.") }
    }

    func run() throws {
        if version {
            print("settee couchjs: Apache CouchDB's query-server protocol on SpiderMonkey 102")
            return
        }
        LoggingSystem.bootstrap { label in StandardErrorLogHandler(label: label, level: .warning) }
        var configuration = JavaScriptConfiguration()
        configuration.heapLimitBytes = heapBytes
        configuration.allowsCodeGeneration = allowsEval
        let worker = try JavaScriptWorker(configuration: configuration)
        let status = try worker.run { context in
            try QueryServer(context: context, transport: FileDescriptorTransport(), logger: Logger(label: "settee.couchjs")).run()
        }
        if status == 1 { printError("out of memory") }
        if status != 0 { throw ExitCode(status) }
    }
}
