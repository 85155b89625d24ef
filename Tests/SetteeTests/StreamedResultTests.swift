import Foundation
import Testing
@testable import Settee
@testable import SetteeViews

/// A database of `count` documents of about 300 bytes, and a view of them by `n`.
private func makeDatabase(_ count: Int, in directory: TemporaryDirectory, with settee: SetteeExecutable) throws -> String {
    let db = directory.url.appendingPathComponent("db").path
    var lines = ""
    lines.reserveCapacity(count * 320)
    let text = String(repeating: "lorem ipsum ", count: 20)
    for index in 0..<count {
        lines += #"{"_id":"doc\#(String(format: "%07d", index))","n":\#(index % 997),"text":"\#(text)"}"# + "\n"
    }
    let input = directory.file("docs.ndjson", contents: lines)
    let design = directory.file("app.json", contents: #"""
        {"_id": "_design/app", "views": {
          "by_n": {"map": "function (doc) { emit(doc.n, doc._id.length); }"},
          "count": {"map": "function (doc) { emit([doc.n % 7, doc.n], 1); }", "reduce": "_count"}}}
        """#)
    for arguments in [["import", input.path], ["design", "load", design.path], ["index"]] {
        let outcome = try settee.run(["--db", db] + arguments, in: directory.url)
        try #require(outcome.exitStatus == 0, "\(arguments[0]): \(outcome.standardError)")
    }
    try FileManager.default.removeItem(at: input)
    return db
}

@Suite("Large results handed over row by row", .ownThread)
struct StreamedResultTests {
    @Test("settee query, all-docs and changes print rows as they read them: peak memory does not grow with the rows (20k vs 200k), and the output is the whole result's JSON byte for byte")
    func commandLineMemory() throws {
        let settee = try SetteeExecutable.find()
        let commands: [(name: String, arguments: [String])] = [
            ("query --include_docs", ["query", "--include_docs", "true", "app/by_n"]),
            ("all-docs --include_docs", ["all-docs", "--include_docs", "true"]),
            ("changes", ["changes"]),
        ]
        var peaks: [String: [Int]] = [:]
        for count in [20_000, 200_000] {
            let directory = TemporaryDirectory()
            let db = try makeDatabase(count, in: directory, with: settee)
            var outputs: [String: String] = [:]
            for command in commands {
                let outcome = try settee.run(["--db", db] + command.arguments, in: directory.url)
                #expect(outcome.exitStatus == 0, "\(command.name): \(outcome.standardError)")
                peaks[command.name, default: []].append(outcome.peakAnonymousBytes)
                print("\(command.name), \(count) rows: peak anonymous \(outcome.peakAnonymousBytes >> 20) MiB, peak resident \(outcome.peakResidentBytes >> 20) MiB")
                outputs[command.name] = outcome.standardOutput
            }
            guard count == 20_000 else { continue }
            // The same answers, whole, from the library.
            let database = try Database(at: URL(fileURLWithPath: db))
            let parameters = [(name: "include_docs", value: "true")]
            #expect(outputs["query --include_docs"] == (try database.query("app/by_n", options: ViewQueryOptions(parameters: parameters)).json + "\n"))
            #expect(outputs["all-docs --include_docs"] == (try database.allDocuments(options: ViewQueryOptions(parameters: parameters)).json + "\n"))
            // As `settee changes` printed the feed whole: one JSON value, CouchDB's shape.
            let feed = try database.changes()
            #expect(feed.count == count + 1, "the documents and the design document")
            let whole = JSONValue.object([
                ("results", .array(feed.map { change in
                    var row: [(key: String, value: JSONValue)] = [
                        ("seq", .number(Double(change.sequence))), ("id", .string(change.id)),
                        ("changes", [["rev": .string(change.revision.description)]]),
                    ]
                    if change.isDeleted { row.append(("deleted", true)) }
                    return .object(row)
                })),
                ("last_seq", .number(Double(feed.last?.sequence ?? 0))),
            ])
            #expect(outputs["changes"] == whole.jsonText + "\n")
        }
        for command in commands {
            let peak = try #require(peaks[command.name])
            #expect(peak[1] - peak[0] < 24 << 20, "\(command.name): \(peak[0] >> 20) MiB at 20k rows, \(peak[1] >> 20) MiB at 200k")
        }
    }

    /// Reads a query with forEachRow into a whole result, checking the header comes first.
    private static func streamed(_ read: ((ViewResultHeader) throws -> Void, (ViewRow) throws -> Void) throws -> Void) throws -> ViewResult {
        var header: ViewResultHeader?
        var rows: [ViewRow] = []
        try read({ header = $0 }, { row in
            #expect(header != nil, "the header comes before the first row")
            rows.append(row)
        })
        let found = try #require(header)
        return ViewResult(totalRows: found.totalRows, offset: found.offset, updateSequence: found.updateSequence, rows: rows,
                          writesNullOffset: found.writesNullOffset)
    }

    @Test("forEachRow, forEachDocumentRow and forEachChange hand over what query, allDocuments and changes return, for every kind of option")
    func libraryRowsEqualWholeResults() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 2
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: #"""
            {"_id": "_design/app", "views": {
              "by_n": {"map": "function (doc) { emit(doc.n, doc._id.length); }"},
              "count": {"map": "function (doc) { emit([doc.n % 7, doc.n], 1); }", "reduce": "_count"}}}
            """#))
        _ = try db.importDocuments(Data((0..<3000).map { #"{"_id":"doc\#(String(format: "%05d", $0))","n":\#($0 % 97)}"# }.joined(separator: "\n").utf8))
        try db.delete("doc00010", revision: nil)
        let queries: [(String, [(String, String)])] = [
            ("app/by_n", []), ("app/by_n", [("include_docs", "true")]), ("app/by_n", [("descending", "true"), ("limit", "17")]),
            ("app/by_n", [("startkey", "10"), ("endkey", "20"), ("skip", "5")]), ("app/by_n", [("startkey", "50"), ("limit", "3")]),
            ("app/by_n", [("keys", "[3,1,99]")]), ("app/by_n", [("key", "4"), ("update_seq", "true")]),
            ("app/by_n", [("startkey", "90"), ("endkey", "10"), ("descending", "true"), ("inclusive_end", "false")]),
            ("app/by_n", [("limit", "0")]), ("app/count", []), ("app/count", [("group", "true"), ("skip", "3"), ("limit", "40")]),
            ("app/count", [("group_level", "1"), ("descending", "true")]), ("app/count", [("reduce", "false"), ("limit", "5")]),
        ]
        for (view, parameters) in queries {
            let options = try ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) })
            let whole = try db.query(view, options: options)
            let streamed = try Self.streamed { header, row in try db.forEachRow(view, options: options, header: header, row) }
            #expect(streamed == whole, "\(view) \(parameters)")
            #expect(streamed.json == whole.json)
        }
        let allDocs: [[(String, String)]] = [
            [], [("include_docs", "true"), ("limit", "10")], [("startkey", #""doc00100""#), ("endkey", #""doc00200""#), ("skip", "3")],
            [("descending", "true"), ("startkey", #""doc00100x""#), ("limit", "4")], [("startkey", #""doc00005""#), ("endkey", #""doc00012""#), ("inclusive_end", "false")],
            [("keys", #"["doc00010","doc00011","nope",7]"#), ("include_docs", "true")], [("keys", #"["doc00001","doc00002","doc00003"]"#), ("skip", "1"), ("limit", "1")],
            [("update_seq", "true"), ("limit", "0")],
        ]
        for parameters in allDocs {
            let options = try ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) })
            let whole = try db.allDocuments(options: options)
            let streamed = try Self.streamed { header, row in try db.forEachDocumentRow(options: options, header: header, row) }
            #expect(streamed == whole, "\(parameters)")
        }
        for (since, limit) in [(0, nil), (100, 7), (2999, nil), (5000, nil), (0, 0)] as [(UInt64, Int?)] {
            var changes: [Change] = []
            try db.forEachChange(since: since, limit: limit) { changes.append($0) }
            #expect(changes == (try db.changes(since: since, limit: limit)), "since \(since), limit \(String(describing: limit))")
        }
    }

    @Test("An error thrown from the row callback ends the query and is rethrown; the database answers the next one")
    func callbackErrorStops() throws {
        struct Enough: Error {}
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        _ = try db.importDocuments(Data((0..<100).map { #"{"_id":"d\#($0)"}"# }.joined(separator: "\n").utf8))
        var seen = 0
        #expect(throws: Enough.self) {
            try db.forEachDocumentRow { _ in
                seen += 1
                if seen == 10 { throw Enough() }
            }
        }
        #expect(seen == 10)
        #expect(try db.allDocuments().rows.count == 100)
    }
}
