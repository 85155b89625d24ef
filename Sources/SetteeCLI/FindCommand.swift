import ArgumentParser
import Foundation
import Settee

struct FindCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Find documents with a Mango selector (CouchDB's _find request; `-` reads it from standard input).",
        discussion: """
            BODY is CouchDB's _find request: {"selector": {...}, "fields": [...], "sort": [...], "limit": N, "skip": N, \
            "bookmark": "...", "use_index": ..., "execution_stats": true}. Prints CouchDB's response: \
            {"docs": [...], "bookmark": "...", "warning": "..."}. Pass the bookmark back for the next page.
            """)

    @Argument(help: ArgumentHelp("The request as JSON, or - for standard input.", valueName: "body"))
    var body: String

    @Option(name: .long, help: "In a partitioned database, find in this partition only (CouchDB's /db/_partition/P/_find).")
    var partition: String?

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let request = try FindRequest.inPartition(partition, json: requestBody(body))
            let db = try database.open(creating: false)
            // An index behind the documents is brought up to date first.
            let bar = ProgressBar(label: "indexing", unit: "docs")
            let result = try db.find(request, progress: bar.update)
            bar.finish()
            // The stored documents copied into the response, none parsed.
            print(result.jsonText)
        }
    }
}

struct ExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show how find would run a request (CouchDB's _explain; `-` reads it from standard input).",
        discussion: "Prints the index chosen, the key range read, the normalized selector and why each other index was not chosen.")

    @Argument(help: ArgumentHelp("The _find request as JSON, or - for standard input.", valueName: "body"))
    var body: String

    @Option(name: .long, help: "In a partitioned database, explain a query of this partition (CouchDB's /db/_partition/P/_explain).")
    var partition: String?

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let request = try FindRequest.inPartition(partition, json: requestBody(body))
            printJSON(try database.open(creating: false).explain(request))
        }
    }
}

/// A request body given as an argument: the JSON itself, or `-` for standard input.
func requestBody(_ argument: String) -> String {
    argument == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : argument
}

extension FindRequest {
    /// A `find` request from its JSON, of `partition` when one is given
    /// (CouchDB's `/db/_partition/{partition}/_find`): its body names the
    /// same partition or none.
    static func inPartition(_ partition: String?, json: String) throws -> FindRequest {
        var request = try FindRequest(json: json)
        guard let partition else { return request }
        try Partition.validate(partition)
        if let given = request.partition, given != partition {
            throw MangoError(error: "bad_request", reason: "Conflicting value for `partition` in the request body: \"\(given)\", given with --partition: \"\(partition)\"")
        }
        request.partition = partition
        return request
    }
}
