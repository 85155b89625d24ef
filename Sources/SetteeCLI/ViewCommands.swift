import ArgumentParser
import Foundation
import Settee

struct DesignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "design", abstract: "Manage design documents.",
        subcommands: [DesignLoadCommand.self, DesignListCommand.self, DesignShowCommand.self, DesignDeleteCommand.self])
}

struct DesignLoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Load design documents from a .json file or a folder of them into the database.",
        discussion: """
            Every function is compiled first; if any design document is invalid, nothing is stored and each \
            problem is listed with its file, design document, view and line. Views whose source changed get \
            a new index on their next query; the others keep theirs.
            """)

    @Argument(help: "A design document file, or a folder of .json design documents.")
    var path: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let loaded = try db.loadDesignDocuments(from: URL(fileURLWithPath: path))
            let info = try db.viewInfo()
            printJSON(["ok": true, "design_documents": .array(loaded.map { design in
                .object([
                    ("id", .string(design.id)),
                    ("views", .array(design.views.map { view in
                        let state = info.first { $0.path == view.path }
                        return .object([
                            ("name", .string(view.name)), ("signature", .string(view.signature)),
                            ("indexed_seq", .number(Double(state?.indexedSequence ?? 0))),
                        ])
                    })),
                ])
            })])
        }
    }
}

/// One option per CouchDB view parameter, under its CouchDB name (and the
/// same name in kebab case: `--group-level`, `--include-docs`), each taking
/// its value as in CouchDB's query string. A boolean parameter standing
/// alone means true (``BooleanQueryFlags``).
struct ViewQueryParameters: ParsableArguments {
    @Option(name: .couchDB("key"), help: "Only rows with this key (JSON).") var key: String?
    @Option(name: .couchDB("keys"), help: "Only rows with these keys, in this order (a JSON array).") var keys: String?
    @Option(name: .couchDB("startkey"), help: "Rows from this key (JSON).") var startkey: String?
    @Option(name: .couchDB("start_key"), help: "Same as --startkey.") var startKey: String?
    @Option(name: .couchDB("endkey"), help: "Rows up to this key (JSON).") var endkey: String?
    @Option(name: .couchDB("end_key"), help: "Same as --endkey.") var endKey: String?
    @Option(name: .couchDB("startkey_docid"), help: "Among rows with the start key, from this document id.") var startkeyDocID: String?
    @Option(name: .couchDB("start_key_doc_id"), help: "Same as --startkey_docid.") var startKeyDocID: String?
    @Option(name: .couchDB("endkey_docid"), help: "Among rows with the end key, up to this document id.") var endkeyDocID: String?
    @Option(name: .couchDB("end_key_doc_id"), help: "Same as --endkey_docid.") var endKeyDocID: String?
    @Option(name: .couchDB("inclusive_end"), help: ArgumentHelp("Whether the end key's rows are included (true).", valueName: "true|false")) var inclusiveEnd: String?
    @Option(name: .couchDB("descending"), help: ArgumentHelp("Reverse order (false).", valueName: "true|false")) var descending: String?
    @Option(name: .couchDB("limit"), help: "At most this many rows.") var limit: String?
    @Option(name: .couchDB("skip"), help: "Skip this many rows first (0).") var skip: String?
    @Option(name: .couchDB("group"), help: ArgumentHelp("Group the reduction by key (false).", valueName: "true|false")) var group: String?
    @Option(name: .couchDB("group_level"), help: "Group array keys by their first N elements.") var groupLevel: String?
    @Option(name: .couchDB("reduce"), help: ArgumentHelp("Use the reduce function (true when the view has one).", valueName: "true|false")) var reduce: String?
    @Option(name: .couchDB("include_docs"), help: ArgumentHelp("Include each row's document (false).", valueName: "true|false")) var includeDocs: String?
    @Option(name: .couchDB("conflicts"), help: ArgumentHelp("Include conflicts with include_docs (false).", valueName: "true|false")) var conflicts: String?
    @Option(name: .couchDB("update_seq"), help: ArgumentHelp("Include the index's update_seq (false).", valueName: "true|false")) var updateSeq: String?
    @Option(name: .couchDB("update"), help: ArgumentHelp("Update the index first: true, false or lazy (after answering).", valueName: "true|false|lazy")) var update: String?
    @Option(name: .couchDB("stale"), help: "ok (= update=false) or update_after (= update=lazy).") var stale: String?
    @Option(name: .couchDB("stable"), help: ArgumentHelp("Accepted for compatibility (true/false).", valueName: "true|false")) var stable: String?
    @Option(name: .couchDB("sorted"), help: ArgumentHelp("Accepted for compatibility (true/false).", valueName: "true|false")) var sorted: String?
    @Option(name: .couchDB("partition"), help: "In a partitioned database, only this partition's rows (CouchDB's /db/_partition/P/...).") var partition: String?

    var parameters: [(name: String, value: String)] {
        let all: [(String, String?)] = [
            ("key", key), ("keys", keys), ("startkey", startkey), ("start_key", startKey), ("endkey", endkey),
            ("end_key", endKey), ("startkey_docid", startkeyDocID), ("start_key_doc_id", startKeyDocID),
            ("endkey_docid", endkeyDocID), ("end_key_doc_id", endKeyDocID), ("inclusive_end", inclusiveEnd),
            ("descending", descending), ("limit", limit), ("skip", skip), ("group", group), ("group_level", groupLevel),
            ("reduce", reduce), ("include_docs", includeDocs), ("conflicts", conflicts), ("update_seq", updateSeq),
            ("update", update), ("stale", stale), ("stable", stable), ("sorted", sorted), ("partition", partition),
        ]
        let given = all.compactMap { name, value in value.map { (name: name, value: $0) } }
        return Self.inCommandLineOrder(given, arguments: CommandLine.arguments)
    }

    /// The parameters in the order their options were given (each at its last
    /// occurrence, the one whose value it holds): CouchDB applies query
    /// parameters in order, a later `key`, `keys`, `startkey` or `endkey`
    /// replacing an earlier one's bounds.
    static func inCommandLineOrder(_ parameters: [(name: String, value: String)], arguments: [String]) -> [(name: String, value: String)] {
        let options = arguments.prefix { $0 != "--" }
        /// Where the parameter was last given, under its CouchDB name or its kebab-case one.
        func position(_ name: String) -> Int {
            let spellings = Set([name, BooleanQueryFlags.kebabCase(name)])
            return options.lastIndex { word in
                spellings.contains { word == "--" + $0 || word.hasPrefix("--" + $0 + "=") }
            } ?? Int.max
        }
        return parameters.enumerated()
            .map { (position: position($0.element.name), index: $0.offset, parameter: $0.element) }
            .sorted { ($0.position, $0.index) < ($1.position, $1.index) }
            .map(\.parameter)
    }
}

struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Query a view (DDOC/VIEW) with CouchDB's parameters; prints CouchDB's response JSON.",
        discussion: """
            Values are written as in CouchDB's query string: --startkey '"a"' --keys '[1,2]' --group_level 2 \
            --reduce false. A boolean parameter alone means true (--descending, --include_docs, --group); \
            each parameter also takes its kebab-case name (--group-level, --include-docs, --start-key). \
            The view's index is brought up to date first (unless --update false or --stale ok); a progress bar \
            shows on standard error while it builds.
            """)

    @OptionGroup var query: ViewQueryParameters

    @Argument(help: "The view, as DESIGN/VIEW.", completion: .custom(ShellCompletion.views))
    var view: String

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let options = try ViewQueryOptions(parameters: query.parameters)
            let bar = ProgressBar(label: "indexing \(view)", unit: "docs")
            // Rows are printed as they are read: memory does not grow with the result.
            try StreamedOutput().printResult { header, row in
                try db.forEachRow(view, options: options, progress: bar.update, header: { result in
                    bar.finish()
                    header(result)
                }, row)
            }
        }
    }
}

struct AllDocsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all-docs", abstract: "List documents by id, as CouchDB's _all_docs, with the parameters of query that apply to it.")

    @OptionGroup var query: AllDocsQueryParameters

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let options = try ViewQueryOptions(parameters: query.parameters)
            // Rows are printed as they are read: memory does not grow with the result.
            try StreamedOutput().printResult { header, row in
                try db.forEachDocumentRow(options: options, header: header, row)
            }
        }
    }
}

struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index", abstract: "Bring every view's index up to date (queries do this too, view by view).",
        discussion: """
            A stored design document that cannot be used (written with put in another language than \
            javascript, without a map, or with a function that does not compile) is left out: the others are \
            indexed, each one left out is named on standard error with the reason and listed under "skipped", \
            and the exit status is 2, as for an import that rejected documents.
            """)


    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let bar = ProgressBar(label: "indexing", unit: "docs")
            let started = ContinuousClock.now
            var skipped: [DesignDocumentError] = []
            do {
                try db.updateIndexes(progress: bar.update)
            } catch let error as DesignDocumentErrors {
                // The usable design documents are indexed; these were left out.
                skipped = error.errors
            }
            bar.finish()
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let views: [JSONValue] = try db.viewInfo().map { view in
                ["view": .string(view.path), "indexed_seq": .number(Double(view.indexedSequence)), "rows": .number(Double(view.rowCount))]
            }
            var report: [(key: String, value: JSONValue)] = [
                ("ok", .bool(skipped.isEmpty)), ("seconds", .number((seconds * 1000).rounded() / 1000)), ("views", .array(views)),
            ]
            if !skipped.isEmpty {
                report.append(("skipped", .array(skipped.map { problem in
                    .object([("id", problem.designDocument.map(JSONValue.string) ?? .null), ("reason", .string(problem.description))])
                })))
            }
            printJSON(.object(report))
            if !skipped.isEmpty {
                ErrorReport.printSkipped(skipped)
                throw ExitCode(ExitStatus.someRejected)
            }
        }
    }
}
