import ArgumentParser
import Foundation
import Settee

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import documents from NDJSON (one object per line) or a JSON array.",
        discussion: """
            Bad documents are listed with their line and reason; the others are written. Exits with 0 when \
            every document was written, \(ExitStatus.someRejected) when some were rejected (the others are \
            written all the same, and the report says which), 1 when the import could not run.
            """)

    @Argument(help: "The file to import, or - for standard input.")
    var file: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let bar = ProgressBar(label: "import", unit: "docs")
            let started = ContinuousClock.now
            let report: ImportReport
            if file == "-" {
                report = try db.importDocuments(from: FileHandle.standardInput) { bar.update($0) }
            } else {
                report = try db.importDocuments(from: URL(fileURLWithPath: file)) { bar.update($0) }
            }
            bar.finish()
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let rejected: [JSONValue] = report.rejected.map { rejection in
                var row: [(key: String, value: JSONValue)] = [("line", .number(Double(rejection.line)))]
                if let id = rejection.id { row.append(("id", .string(id))) }
                row.append(("error", .string(rejection.error.code.rawValue)))
                // A line is parsed alone: its error's "line 1" is the line the row names.
                row.append(("reason", .string(rejection.error.reason.replacingOccurrences(of: " at line 1, column ", with: " at column "))))
                return .object(row)
            }
            printJSON([
                "ok": .bool(report.rejected.isEmpty),
                "imported": .number(Double(report.imported)),
                "rejected_count": .number(Double(report.rejected.count)),
                "rejected": .array(rejected),
                "seconds": .number((seconds * 1000).rounded() / 1000),
                "docs_per_second": .number(seconds > 0 ? (Double(report.imported) / seconds).rounded() : 0),
            ])
            if !report.rejected.isEmpty {
                // The first twenty, as in the report on standard output, which lists them all.
                printError(JSONValue.object([
                    ("error", "documents_rejected"),
                    ("reason", .string("\(report.rejected.count) of \(report.imported + report.rejected.count) documents were rejected; "
                                       + "the others were written")),
                    ("rejected_count", .number(Double(report.rejected.count))),
                    ("rejected", .array(Array(rejected.prefix(20)))),
                ]).jsonText)
            }
            // A script must not take a partial import for a whole one.
            if !report.rejected.isEmpty { throw ExitCode(ExitStatus.someRejected) }
        }
    }
}

extension ProgressBar {
    func update(_ progress: ImportProgress) {
        // The share committed: what is read runs a transaction ahead of it.
        update(done: progress.imported + progress.rejected, fraction: progress.fractionCommitted)
    }
}
