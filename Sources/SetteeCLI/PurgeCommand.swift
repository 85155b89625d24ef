import ArgumentParser
import Foundation
import Settee

struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge", abstract: "Remove a document completely, as CouchDB's _purge (no tombstone; views drop its rows).",
        discussion: #"Prints CouchDB's response: {"purge_seq":N,"purged":{"DOCID":["REV"]}}; the list is empty when nothing was purged."#)

    @Argument(help: "The document's id.")
    var id: String

    @Option(help: "A revision to purge (repeatable): the document is purged only when its current revision is one of them. By default the current one.")
    var rev: [String] = []

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        for rev in rev where Revision(rev) == nil { throw ValidationError("--rev must look like N-<id> (a generation, a dash, an id), not \(rev)") }
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let result = try db.purge(id, revisions: rev.isEmpty ? nil : rev.compactMap(Revision.init))
            printJSON(Self.response(result))
        }
    }

    static func response(_ result: PurgeResult) -> JSONValue {
        let purged = result.purged.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.array($0.value.map { .string($0.description) })) }
        return ["purge_seq": .number(Double(result.purgeSequence)), "purged": .object(purged)]
    }
}
