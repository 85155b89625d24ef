import ArgumentParser
import Foundation
import Settee

/// `design list`: the stored design documents, each with its views.
struct DesignListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the stored design documents with their revision, language and views.",
        discussion: """
            A design document that cannot be read as one (written with put) is listed with "error" instead \
            of its views.
            """)


    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            var options = ViewQueryOptions()
            // Design document ids sort between "_design/" and "_design0" in _all_docs' raw order.
            options.startKey = "_design/"
            options.endKey = "_design0"
            options.inclusiveEnd = false
            var listed: [JSONValue] = []
            try db.forEachDocumentRow(options: options) { row in
                guard let id = row.id else { return }
                var entry: [(key: String, value: JSONValue)] = [("id", .string(id))]
                if let rev = try row.value["rev"] { entry.append(("rev", rev)) }
                do {
                    if let design = try db.designDocument(id) {
                        entry.append(("language", .string(design.language)))
                        entry.append(("views", .array(design.views.map { .string($0.name) })))
                    }
                } catch {
                    entry.append(("error", ErrorReport.json(for: error)))
                }
                listed.append(.object(entry))
            }
            printJSON(["design_documents": .array(listed)])
        }
    }
}

/// `design show DDOC`: one design document as stored.
struct DesignShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print a stored design document (as get _design/DDOC does).")

    @Argument(help: "The design document: NAME or _design/NAME.", completion: .custom(ShellCompletion.designDocuments))
    var designDocument: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let id = DesignDocumentName.id(designDocument)
            guard let document = try db.document(id) else {
                throw DocumentError(.notFound, try db.documentIncludingDeleted(id) == nil ? "missing" : "deleted", id: id)
            }
            print(document.json)
        }
    }
}

/// `design delete DDOC`: deletes a design document, and with it its views' indexes.
struct DesignDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a design document; indexes no other design document uses are removed with it.")

    @Argument(help: "The design document: NAME or _design/NAME.", completion: .custom(ShellCompletion.designDocuments))
    var designDocument: String

    @Option(help: "The revision to delete; by default the current one.")
    var rev: String?

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        if let rev, Revision(rev) == nil { throw ValidationError("--rev must look like N-<id> (a generation, a dash, an id), not \(rev)") }
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let id = DesignDocumentName.id(designDocument)
            let result = try db.delete(id, revision: rev.flatMap(Revision.init))
            printJSON(["ok": true, "id": .string(result.id), "rev": .string(result.revision.description)])
        }
    }
}

enum DesignDocumentName {
    /// `NAME` or `_design/NAME` → `_design/NAME`.
    static func id(_ name: String) -> String {
        name.hasPrefix("_design/") ? name : "_design/" + name
    }
}
