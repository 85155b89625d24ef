import ArgumentParser
import Foundation
import Settee

struct CreateIndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-index",
        abstract: "Create a JSON or array index for find (CouchDB's _index request; `-` reads it from standard input).",
        discussion: """
            BODY is CouchDB's POST /db/_index body: {"index": {"fields": ["type", {"year": "desc"}], \
            "partial_filter_selector": {...}}, "name": "...", "ddoc": "...", "type": "json"}. An array index (one entry \
            per array element, as Couchbase Lite's) has "type": "array" and {"index": {"array": "contacts[].phones", \
            "fields": ["type"]}}: the path of the arrays (a[].b: the arrays at b in each element of a) and the fields \
            evaluated on each element (none: the element itself). The index is kept in a design document with \
            "language": "query", as CouchDB keeps it. Prints {"result": "created" or "exists", "id", "name"}.
            """)

    @Argument(help: ArgumentHelp("The request as JSON, or - for standard input.", valueName: "body"))
    var body: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let request = try IndexRequest(json: requestBody(body))
            printJSON(try database.open().createIndex(request).json)
        }
    }
}

struct ListIndexesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-indexes",
        abstract: "List the indexes find can use (CouchDB's GET /db/_index): _all_docs, then the JSON and array indexes.")


    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let indexes = try database.open(creating: false).listIndexes()
            printJSON(["total_rows": .number(Double(indexes.count)), "indexes": .array(indexes.map(\.json))])
        }
    }
}

struct DeleteIndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-index",
        abstract: "Delete a JSON or array index; its design document goes with its last index.")

    @Argument(help: ArgumentHelp("The design document (NAME or _design/NAME).", valueName: "ddoc"))
    var designDocument: String

    @Argument(help: "The index's name.")
    var name: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            try database.open(creating: false).deleteIndex(designDocument: designDocument, name: name)
            printJSON(["ok": true])
        }
    }
}
