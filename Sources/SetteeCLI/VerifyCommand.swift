import ArgumentParser
import Foundation
import Settee

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every document record, the changes feed and every view index against the documents.",
        discussion: """
            Prints what was checked and each problem found, naming the document, the changes feed entry or the \
            index; exits with status 1 when anything is damaged. Reads only.
            """)


    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let report = try db.verify()
            printJSON([
                "ok": .bool(report.isIntact),
                "documents": .number(Double(report.documents)),
                "changes": .number(Double(report.changes)),
                "indexes": .number(Double(report.indexes)),
                "index_rows": .number(Double(report.indexRows)),
                "problems": .array(report.problems.map { .string($0) }),
                "unlisted_problems": .number(Double(report.unlistedProblems)),
            ])
            if !report.isIntact {
                ErrorReport.print(DatabaseDamage(problems: report.problems.count + report.unlistedProblems))
                throw ExitCode(1)
            }
        }
    }
}

/// What `verify` reports on standard error when it finds problems (listed on standard output).
struct DatabaseDamage: SetteeError {
    var problems: Int
    var errorCode: SetteeErrorCode { .databaseDamaged }
    var description: String { "\(problems) problem(s) found; the database is damaged" }
}
