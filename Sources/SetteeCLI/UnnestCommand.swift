import ArgumentParser
import Foundation
import Settee

struct UnnestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unnest",
        abstract: "Find array elements, one result per element with its document (SQL++'s UNNEST; `-` reads the request from standard input).",
        discussion: """
            BODY is {"path": "contacts[].phones", "element": {"type": "home"}, "selector": {"type": "person"}, \
            "limit": N, "skip": N, "bookmark": "...", "execution_stats": true}: the path of the arrays (a[].b: the arrays \
            at b in each element of a), the conditions on each element as inside $elemMatch, and find's selector for \
            its document. An array index on the path (create-index with "type": "array") serves it when it can. Prints \
            {"elements": [{"id", "position", "element", "doc"}, ...], "bookmark": "...", "index": {...}}, by document \
            _id, then position; pass the bookmark back for the next page (it resumes within a document).
            """)

    @Argument(help: ArgumentHelp("The request as JSON, or - for standard input.", valueName: "body"))
    var body: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let text = requestBody(body)
            let request = try UnnestRequest(json: text)
            let statistics = try JSONValue(parsing: text)["execution_stats"] == true
            // An array index behind the documents is brought up to date first.
            let bar = ProgressBar(label: "indexing", unit: "docs")
            let result = try database.open(creating: false).findElements(request, progress: bar.update)
            bar.finish()
            printJSON(result.json(executionStats: statistics))
        }
    }
}
