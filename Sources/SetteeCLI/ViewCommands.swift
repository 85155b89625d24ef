import ArgumentParser
import Foundation
import Settee

struct DesignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "design", abstract: "Manage design documents.", subcommands: [DesignLoadCommand.self])
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

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "A design document file, or a folder of .json design documents.")
    var path: String

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

/// One option per CouchDB view parameter, under its CouchDB name, each taking
/// its value as in CouchDB's query string.
struct ViewQueryParameters: ParsableArguments {
    @Option(name: .customLong("key"), help: "Only rows with this key (JSON).") var key: String?
    @Option(name: .customLong("keys"), help: "Only rows with these keys, in this order (a JSON array).") var keys: String?
    @Option(name: .customLong("startkey"), help: "Rows from this key (JSON).") var startkey: String?
    @Option(name: .customLong("start_key"), help: "Same as --startkey.") var startKey: String?
    @Option(name: .customLong("endkey"), help: "Rows up to this key (JSON).") var endkey: String?
    @Option(name: .customLong("end_key"), help: "Same as --endkey.") var endKey: String?
    @Option(name: .customLong("startkey_docid"), help: "Among rows with the start key, from this document id.") var startkeyDocID: String?
    @Option(name: .customLong("start_key_doc_id"), help: "Same as --startkey_docid.") var startKeyDocID: String?
    @Option(name: .customLong("endkey_docid"), help: "Among rows with the end key, up to this document id.") var endkeyDocID: String?
    @Option(name: .customLong("end_key_doc_id"), help: "Same as --endkey_docid.") var endKeyDocID: String?
    @Option(name: .customLong("inclusive_end"), help: "Whether the end key's rows are included (true).") var inclusiveEnd: String?
    @Option(name: .customLong("descending"), help: "Reverse order (false).") var descending: String?
    @Option(name: .customLong("limit"), help: "At most this many rows.") var limit: String?
    @Option(name: .customLong("skip"), help: "Skip this many rows first (0).") var skip: String?
    @Option(name: .customLong("group"), help: "Group the reduction by key (false).") var group: String?
    @Option(name: .customLong("group_level"), help: "Group array keys by their first N elements.") var groupLevel: String?
    @Option(name: .customLong("reduce"), help: "Use the reduce function (true when the view has one).") var reduce: String?
    @Option(name: .customLong("include_docs"), help: "Include each row's document (false).") var includeDocs: String?
    @Option(name: .customLong("conflicts"), help: "Include conflicts with include_docs (false).") var conflicts: String?
    @Option(name: .customLong("update_seq"), help: "Include the index's update_seq (false).") var updateSeq: String?
    @Option(name: .customLong("update"), help: "Update the index first: true, false or lazy (after answering).") var update: String?
    @Option(name: .customLong("stale"), help: "ok (= update=false) or update_after (= update=lazy).") var stale: String?
    @Option(name: .customLong("stable"), help: "Accepted for compatibility (true/false).") var stable: String?
    @Option(name: .customLong("sorted"), help: "Accepted for compatibility (true/false).") var sorted: String?

    var parameters: [(name: String, value: String)] {
        let all: [(String, String?)] = [
            ("key", key), ("keys", keys), ("startkey", startkey), ("start_key", startKey), ("endkey", endkey),
            ("end_key", endKey), ("startkey_docid", startkeyDocID), ("start_key_doc_id", startKeyDocID),
            ("endkey_docid", endkeyDocID), ("end_key_doc_id", endKeyDocID), ("inclusive_end", inclusiveEnd),
            ("descending", descending), ("limit", limit), ("skip", skip), ("group", group), ("group_level", groupLevel),
            ("reduce", reduce), ("include_docs", includeDocs), ("conflicts", conflicts), ("update_seq", updateSeq),
            ("update", update), ("stale", stale), ("stable", stable), ("sorted", sorted),
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
        func position(_ name: String) -> Int {
            options.lastIndex { $0 == "--" + name || $0.hasPrefix("--" + name + "=") } ?? Int.max
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
            --descending true --include_docs true --reduce false. The view's index is brought up to date first \
            (unless --update false or --stale ok); a progress bar shows on standard error while it builds.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var query: ViewQueryParameters

    @Argument(help: "The view, as DESIGN/VIEW.")
    var view: String

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let options = try ViewQueryOptions(parameters: query.parameters)
            let bar = ProgressBar(label: "indexing \(view)", unit: "docs")
            // Rows are printed as they are read: memory does not grow with the result.
            try StreamedOutput().printResult { header, row in
                try db.forEachRow(view, options: options, progress: { progress in
                    bar.update(done: progress.processed, fraction: Double(progress.processed) / Double(max(progress.total, 1)))
                }, header: { result in
                    bar.finish()
                    header(result)
                }, row)
            }
        }
    }
}

struct AllDocsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all-docs", abstract: "List documents by id, as CouchDB's _all_docs, with the same parameters as query.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var query: ViewQueryParameters

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
                try db.updateIndexes { progress in
                    bar.update(done: progress.processed, fraction: Double(progress.processed) / Double(max(progress.total, 1)))
                }
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
            for problem in skipped { printError("settee: skipped a design document that cannot be used: \(problem)") }
            if !skipped.isEmpty { throw ExitCode(ExitStatus.someRejected) }
        }
    }
}
