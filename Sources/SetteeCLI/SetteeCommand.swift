import ArgumentParser
import Foundation
import Logging
import Settee

@main
struct SetteeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settee",
        abstract: "CouchDB-style documents and JavaScript views, embedded.",
        discussion: """
            Every command but couchjs works on the database directory given with --db (created when missing by \
            commands that write; commands that only read say there is no database). The database options may come \
            before the subcommand too: settee --db PATH import FILE. \
            Results are JSON on standard output; an error is one JSON object on standard error \
            ({"error": …, "reason": …}, as CouchDB answers) with a non-zero exit status: 1 when a command failed, \
            2 when it finished but refused some of its input (import, index), 64 when its arguments are wrong.
            """,
        version: SetteeVersion.current,
        subcommands: [
            CreateCommand.self, ImportCommand.self, PutCommand.self, GetCommand.self, DeleteCommand.self,
            ChangesCommand.self, InfoCommand.self, DesignCommand.self, IndexCommand.self, QueryCommand.self, AllDocsCommand.self, FindCommand.self, ExplainCommand.self, UnnestCommand.self,
            CreateIndexCommand.self, ListIndexesCommand.self, DeleteIndexCommand.self,
            VerifyCommand.self, WatchCommand.self, CouchJSCommand.self, AttachmentCommand.self,
            PurgeCommand.self, ExpireCommand.self, ExpiringCommand.self, ServeCommand.self, ReplicateCommand.self,
        ])

    /// Runs the command the arguments name. Database options written before
    /// the subcommand are moved after it (``LeadingDatabaseOptions``) and lone
    /// boolean query options are given their value (``BooleanQueryFlags``)
    /// first; an error parsing the arguments is reported as one JSON object
    /// on standard error, as every other error is, with exit status 64.
    static func main() async {
        let arguments = BooleanQueryFlags.expand(LeadingDatabaseOptions.moveAfterSubcommand(Array(CommandLine.arguments.dropFirst())))
        do {
            var command = try await asyncParseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(reportingUsageError: error)
        }
    }

    /// Exits as ArgumentParser would, except that an error is printed as one
    /// JSON object: a usage error (a missing, unknown or invalid argument) as
    /// `{"error":"bad_request","reason":…,"usage":…}`, any other as
    /// ``reportingErrors(_:)`` prints it.
    private static func exit(reportingUsageError error: any Error) -> Never {
        let status = exitCode(for: error)
        // Help, --version, completion scripts and errors a command has already reported.
        guard status != .success, !(error is ExitCode) else { exit(withError: error) }
        guard status == .validationFailure else {
            ErrorReport.print(error)
            Foundation.exit(status.rawValue)
        }
        let full = fullMessage(for: error)
        var report: [(key: String, value: JSONValue)] = [("error", "bad_request"), ("reason", .string(message(for: error)))]
        if let usage = full.range(of: "Usage: ") {
            let text = full[usage.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
                .prefix { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("See '") }
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
            report.append(("usage", .string(text)))
        }
        printError(JSONValue.object(report).jsonText)
        Foundation.exit(status.rawValue)
    }
}

/// Options every database command takes.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The database directory (created when missing by commands that write).", valueName: "path"))
    var db: String

    @Flag(name: .shortAndLong, help: "Log what the engine does to standard error.")
    var verbose = false

    @Option(name: .customLong("max-document-size"),
            help: "The largest document written, in bytes of JSON (CouchDB's max_document_size; 8000000).")
    var maximumDocumentBytes: Int?

    @Option(name: .customLong("max-design-document-size"),
            help: "The largest design document written, loaded or used, in bytes of JSON (2000000).")
    var maximumDesignDocumentBytes: Int?

    @Option(name: .long, help: "Seconds a write waits while another process writes, before it fails (5).")
    var busyTimeout: Double = 5

    @Flag(name: .long, help: "Open the database read-only: every write fails. Files that cannot be written are opened so anyway.")
    var readOnly = false

    func validate() throws {
        guard busyTimeout >= 0 && busyTimeout.isFinite else { throw ValidationError("--busy-timeout must be a number of seconds, not \(busyTimeout)") }
        if let maximumDocumentBytes, maximumDocumentBytes <= 0 { throw ValidationError("--max-document-size must be a positive number of bytes.") }
        if let maximumDesignDocumentBytes, maximumDesignDocumentBytes <= 0 {
            throw ValidationError("--max-design-document-size must be a positive number of bytes.")
        }
    }

    /// The largest document any limit allows (what `put -` reads of standard input at most).
    var largestDocumentBytes: Int {
        let defaults = Database.Options()
        return max(maximumDocumentBytes ?? defaults.maximumDocumentBytes, maximumDesignDocumentBytes ?? defaults.maximumDesignDocumentBytes)
    }

    /// Opens the database; `creating: false` (commands that only read) fails
    /// when there is none rather than creating an empty one.
    func open(creating: Bool = true) throws -> Database {
        LoggingSystem.bootstrap { label in StandardErrorLogHandler(label: label, level: verbose ? .info : .warning) }
        var options = Database.Options()
        if let maximumDocumentBytes { options.maximumDocumentBytes = maximumDocumentBytes }
        if let maximumDesignDocumentBytes { options.maximumDesignDocumentBytes = maximumDesignDocumentBytes }
        options.busyTimeout = .milliseconds(Int64((busyTimeout * 1000).rounded()))
        options.readOnly = readOnly
        options.createIfMissing = creating
        return try Database(at: URL(fileURLWithPath: db), options: options, logger: Logger(label: "settee"))
    }
}

/// Exit statuses besides 0 (success) and 1 (the command failed).
enum ExitStatus {
    /// The command did what it could, but refused some of its input: an
    /// import rejected documents, or an index build left out design documents
    /// it cannot use. What was refused is listed on standard error (and, for
    /// an import, in its report); the rest was done.
    static let someRejected: Int32 = 2
}

/// Runs a command body, turning Settee's errors into one JSON object on
/// standard error (``ErrorReport``) and exit status 1.
func reportingErrors(_ body: () throws -> Void) throws {
    do { try body() } catch { throw reported(error) }
}

/// Runs an async command body as ``reportingErrors(_:)`` runs a synchronous one.
func reportingErrors(_ body: () async throws -> Void) async throws {
    do { try await body() } catch { throw reported(error) }
}

/// What a command throws for `error`: ArgumentParser's own (an exit code, a
/// usage error) as they are; any other printed as one JSON object, then exit status 1.
private func reported(_ error: any Error) -> any Error {
    if error is ExitCode || error is ValidationError { return error }
    ErrorReport.print(error)
    return ExitCode(1)
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

func printJSON(_ value: JSONValue) {
    print(value.jsonText)
}

/// Prints one JSON line and flushes it at once, for commands that run until interrupted.
func printLine(_ value: JSONValue) {
    FileHandle.standardOutput.write(Data((value.jsonText + "\n").utf8))
}
