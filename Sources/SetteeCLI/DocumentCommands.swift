import ArgumentParser
import Foundation
import Settee

struct PutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Write one document (a JSON object; `-` reads it from standard input).",
        discussion: "Include `_rev` to update an existing document, `\"_deleted\": true` to delete it.")

    @Argument(help: "The document as JSON, or - for standard input.")
    var json: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let bytes: [UInt8]
            if json == "-" {
                // No more than a document may take: a larger one is refused without being read whole.
                let largest = database.largestDocumentBytes
                bytes = Array(try FileHandle.standardInput.read(upToCount: largest + 1) ?? Data())
                if bytes.count > largest {
                    throw DocumentError(.documentTooLarge, "the document on standard input is more than \(largest) bytes of JSON, "
                                        + "over the limit (--max-document-size, --max-design-document-size)")
                }
            } else {
                bytes = Array(json.utf8)
            }
            let result: WriteResult
            do {
                result = try bytes.withUnsafeBytes { try db.put(json: $0) }
            } catch var error as DocumentError where error.code == .conflict {
                if let id = error.id {
                    let current = try? db.document(id)
                    error.hint = current.map { "\(id) is at revision \($0.revision): to replace it, give that revision as \"_rev\" (settee get \(id) shows it)" }
                        ?? "\(id) has no revision like the \"_rev\" given: settee get \(id) shows its current one, if any"
                }
                throw error
            }
            printJSON(["ok": true, "id": .string(result.id), "rev": .string(result.revision.description)])
        }
    }
}

struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a document.")

    @Argument(help: "The document's id.")
    var id: String

    @Option(help: ArgumentHelp("Include the bytes of attachments as base64 data (CouchDB's attachments=true; a lone --attachments is true).", valueName: "true|false"))
    var attachments: Bool = false

    @Option(name: [.customLong("atts-since"), .customLong("atts_since")],
            help: ArgumentHelp("With --attachments: a JSON array of revisions the reader has; attachments stored by then stay stubs.", valueName: "revs"))
    var attsSince: String?

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        _ = try sinceRevisions()
    }

    /// `--atts-since` as revisions.
    private func sinceRevisions() throws -> [Revision]? {
        guard let attsSince else { return nil }
        guard case .array(let items)? = try? JSONValue(parsing: attsSince) else {
            throw ValidationError("--atts-since must be a JSON array of revisions, not \(attsSince)")
        }
        return try items.map { item in
            guard let text = item.stringValue, let revision = Revision(text) else {
                throw ValidationError("--atts-since: \(item.jsonText) is not a revision (N-<id>)")
            }
            return revision
        }
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            if attachments, let document = try db.document(id, attachments: true, since: try sinceRevisions()) {
                print(document.json)
                return
            }
            guard let document = try db.documentIncludingDeleted(id), !document.isDeleted else {
                throw DocumentError(.notFound, try db.documentIncludingDeleted(id) == nil ? "missing" : "deleted", id: id)
            }
            print(document.json)
        }
    }
}

struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a document (it leaves a tombstone in the changes feed).")

    @Argument(help: "The document's id.")
    var id: String

    @Option(help: "The revision to delete; by default the current one.")
    var rev: String?

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        if let rev, Revision(rev) == nil { throw ValidationError("--rev must look like N-<id> (a generation, a dash, an id), not \(rev)") }
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let result = try db.delete(id, revision: rev.flatMap(Revision.init))
            printJSON(["ok": true, "id": .string(result.id), "rev": .string(result.revision.description)])
        }
    }
}

struct ChangesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes", abstract: "List the documents changed after a sequence number, as CouchDB's _changes.",
        discussion: """
            With --continuous, prints one change per line as CouchDB's feed=continuous does, then waits for \
            new writes made while it runs (by any process: another shell's settee put too) and prints them, \
            until interrupted.
            """)

    @Option(help: "Only changes after this sequence number.")
    var since: UInt64 = 0

    @Option(help: "At most this many changes.")
    var limit: Int?

    @Flag(help: "Keep printing new changes as they are written (one JSON object per line).")
    var continuous = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        if continuous {
            do {
                let db = try database.open(creating: false)
                var count = 0
                for try await change in db.continuousChanges(since: since) {
                    printLine(Self.row(change))
                    count += 1
                    if let limit, count >= limit { break }
                }
            } catch {
                try reportingErrors { throw error }
            }
            return
        }
        try reportingErrors {
            let db = try database.open(creating: false)
            // Changes are printed as they are read: memory does not grow with the feed.
            let output = StreamedOutput()
            output.write(#"{"results":["#)
            var last = since
            var first = true
            try db.forEachChange(since: since, limit: limit) { change in
                output.write { out in
                    if !first { out.append(UInt8(ascii: ",")) }
                    out.append(contentsOf: Self.row(change).jsonText.utf8)
                }
                first = false
                last = change.sequence
            }
            output.write(#"],"last_seq":"# + JSONValue.number(Double(last)).jsonText + "}\n")
            output.flush()
        }
    }

    private static func row(_ change: Change) -> JSONValue {
        var row: [(key: String, value: JSONValue)] = [
            ("seq", .number(Double(change.sequence))), ("id", .string(change.id)),
            ("changes", [["rev": .string(change.revision.description)]]),
        ]
        if change.isDeleted { row.append(("deleted", true)) }
        return .object(row)
    }
}

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "info", abstract: "Show what the database holds.")


    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let info = try db.info()
            let views: [JSONValue] = try db.viewInfo().map { view in
                [
                    "view": .string(view.path), "signature": .string(view.signature),
                    "indexed_seq": .number(Double(view.indexedSequence)), "rows": .number(Double(view.rowCount)),
                    "bytes": .number(Double(view.bytes)), "map_errors": .number(Double(view.mapErrors)),
                ]
            }
            printJSON([
                "db_name": .string(URL(fileURLWithPath: info.path).lastPathComponent),
                "path": .string(info.path),
                "doc_count": .number(Double(info.documentCount)),
                "doc_del_count": .number(Double(info.deletedDocumentCount)),
                "update_seq": .number(Double(info.updateSequence)),
                "purge_seq": .number(Double(try db.purgeSequence())),
                "sizes": ["file": .number(Double(info.fileSize)), "map": .number(Double(info.mapSize))],
                "props": try db.properties(),
                "views": .array(views),
            ])
        }
    }
}
