import ArgumentParser
import Foundation
import Logging
import Settee
import SetteeReplication

struct ReplicateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicate",
        abstract: "Replicate a database to another, each a local folder or a CouchDB URL.",
        discussion: """
            Carries every revision SOURCE has and TARGET lacks (conflicts, deletions, attachments, design documents; \
            never _local documents) with CouchDB's replication protocol, and records checkpoints at both ends as \
            CouchDB does: a later run, by Settee or by CouchDB, starts where this one stopped. SOURCE and TARGET are \
            database folders or http(s) URLs of databases (http://host:5984/db); credentials come from the URL \
            (http://name:password@host/db) or from SETTEE_SOURCE_USER/SETTEE_SOURCE_PASSWORD and \
            SETTEE_TARGET_USER/SETTEE_TARGET_PASSWORD, and are never printed. Prints the replication's statistics \
            as JSON when it completes; --continuous runs until interrupted, printing them at each checkpoint.
            """)

    @Argument(help: ArgumentHelp("The database to read: a folder or a URL.", valueName: "source"))
    var source: String

    @Argument(help: ArgumentHelp("The database to write: a folder (created when missing) or a URL.", valueName: "target"))
    var target: String

    @Flag(name: .long, help: "Keep replicating new changes until interrupted.")
    var continuous = false

    @Flag(name: .long, help: "Create the target database when it does not exist (a folder target always is).")
    var createTarget = false

    @Option(name: .long, help: ArgumentHelp("Only these documents (comma-separated ids).", valueName: "ids"))
    var docIds: String?

    @Option(name: .long, help: ArgumentHelp("Only the documents a Mango selector matches (JSON).", valueName: "json"))
    var selector: String?

    @Option(name: .long, help: ArgumentHelp("Only the documents a filter function of the source passes (a URL source).", valueName: "ddoc/name"))
    var filter: String?

    @Option(name: .long, help: ArgumentHelp("A query parameter of the filter function (repeatable).", valueName: "name=value"))
    var queryParam: [String] = []

    @Option(name: .long, help: ArgumentHelp("Start from this source sequence instead of the checkpoint.", valueName: "seq"))
    var since: String?

    @Option(name: .long, help: "Changes read per batch.")
    var batchSize = 500

    @Option(name: .long, help: ArgumentHelp("Seconds between checkpoints while changes are carried.", valueName: "seconds"))
    var checkpointInterval: Double = 5

    @Flag(name: .shortAndLong, help: "Log what the replication does to standard error.")
    var verbose = false

    func validate() throws {
        if [docIds != nil, selector != nil, filter != nil].filter({ $0 }).count > 1 {
            throw ValidationError("--doc-ids, --selector and --filter are mutually exclusive")
        }
        if !queryParam.isEmpty && filter == nil { throw ValidationError("--query-param needs --filter") }
        if batchSize <= 0 { throw ValidationError("--batch-size must be positive") }
        if !(checkpointInterval >= 0 && checkpointInterval.isFinite) { throw ValidationError("--checkpoint-interval must be a number of seconds") }
    }

    func run() async throws {
        let verbose = verbose
        LoggingSystem.bootstrap { label in StandardErrorLogHandler(label: label, level: verbose ? .info : .warning) }
        try await reportingErrors {
            var options = ReplicationOptions()
            options.continuous = continuous
            options.createTarget = createTarget
            options.batchSize = batchSize
            options.checkpointInterval = checkpointInterval
            if let docIds { options.filter = .documentIDs(docIds.split(separator: ",").map(String.init)) }
            if let selector {
                guard let value = try? JSONValue(parsing: selector), case .object = value else {
                    throw ValidationError("--selector must be a JSON object, not \(selector)")
                }
                options.filter = .selector(value)
            }
            if let filter {
                var parameters: [String: String] = [:]
                for entry in queryParam {
                    guard let equals = entry.firstIndex(of: "=") else { throw ValidationError("--query-param takes NAME=VALUE") }
                    parameters[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
                }
                options.filter = .function(filter, queryParameters: parameters)
            }
            if let since { options.sinceSequence = (try? JSONValue(parsing: since)) ?? .string(since) }
            let environment = ProcessInfo.processInfo.environment
            let source = try ReplicationEndpoint.named(self.source, username: environment["SETTEE_SOURCE_USER"],
                                                       password: environment["SETTEE_SOURCE_PASSWORD"])
            let target = try ReplicationEndpoint.named(self.target, username: environment["SETTEE_TARGET_USER"],
                                                       password: environment["SETTEE_TARGET_PASSWORD"], creating: true)
            let replicator = Replicator(source: source, target: target, options: options, logger: Logger(label: "settee.replicate"))
            let bar = ProgressBar(label: "replicating", unit: "docs")
            var final = ReplicationStatus()
            for try await status in replicator.statuses() {
                final = status
                bar.update(done: status.docsWritten, fraction: nil)
                if continuous, status.state == .idle { printLine(Self.report(status)) }
            }
            bar.finish()
            printJSON(Self.report(final))
        }
    }

    /// The statistics as CouchDB's `_replicate` answers them.
    static func report(_ status: ReplicationStatus) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("ok", .bool(status.state == .completed || status.state == .idle || status.state == .stopped)),
            ("state", .string("\(status.state)")),
            ("replication_id", .string(status.replicationID)),
            ("source_last_seq", status.checkpointedSequence ?? .null),
            ("missing_checked", .number(Double(status.missingChecked))), ("missing_found", .number(Double(status.missingFound))),
            ("docs_read", .number(Double(status.docsRead))), ("docs_written", .number(Double(status.docsWritten))),
            ("doc_write_failures", .number(Double(status.docWriteFailures))),
        ]
        if !status.failures.isEmpty {
            members.append(("failures", .array(status.failures.prefix(10).map {
                ["id": .string($0.id), "rev": .string($0.revision), "error": .string($0.error), "reason": .string($0.reason)]
            })))
        }
        return .object(members)
    }
}
