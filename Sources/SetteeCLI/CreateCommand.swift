import ArgumentParser
import Foundation
import Settee

/// `settee create`: makes a new database, partitioned if asked (CouchDB's
/// `PUT /db` and `PUT /db?partitioned=true`).
struct CreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a new database (CouchDB's PUT /db); --partitioned makes it a partitioned database.",
        discussion: """
            A partitioned database's document ids are PARTITION:ID, and its views and find indexes are partitioned \
            unless their design document says "options": {"partitioned": false}; query one partition with \
            --partition on query, all-docs, find and explain. A database is partitioned when it is created: \
            an existing one is refused. Prints {"ok":true}.
            """)

    @Flag(name: .long, help: "Make the database partitioned.")
    var partitioned = false

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            // CouchDB's answer to PUT of a database that exists.
            if FileManager.default.fileExists(atPath: database.db) {
                printError(JSONValue.object([("error", "file_exists"),
                                             ("reason", "The database could not be created, the file already exists.")]).jsonText)
                throw ExitCode(1)
            }
            let db = try database.open(creating: true)
            if partitioned { try db.makePartitioned() }
            printJSON(["ok": true])
        }
    }
}
