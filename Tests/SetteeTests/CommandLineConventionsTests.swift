import Foundation
import Testing
import Settee

@Suite("The settee tool's command-line conventions", .ownThread)
struct CommandLineConventionsTests {
    @Test("settee --version prints the version and exits 0")
    func version() throws {
        let fixture = try CommandLineFixture(documents: 0)
        let outcome = try fixture.run(["--version"])
        #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
        let printed = outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed.wholeMatch(of: /\d+\.\d+\.\d+/) != nil, "\(printed)")
    }
}

@Suite("The settee tool's query options", .ownThread)
struct CommandLineQueryOptionTests {
    // CouchDB's boolean parameters are parse_boolean/1 of
    // src/couch_mrview/src/couch_mrview_http.erl: "true" or "false" in any case.
    // On the command line a boolean parameter alone is true, as a flag is.
    @Test("A boolean query option without a value means true: --descending, --include_docs, --group")
    func booleanOptionsAlone() throws {
        let fixture = try CommandLineFixture()
        func output(_ arguments: [String]) throws -> String {
            let outcome = try fixture.run(["--db", fixture.db] + arguments)
            #expect(outcome.exitStatus == 0, "\(arguments): \(outcome.standardError)")
            return outcome.standardOutput
        }
        let flags = try output(["query", "numbers/by_n", "--descending", "--include_docs", "--limit", "2"])
        #expect(flags == (try output(["query", "numbers/by_n", "--descending", "true", "--include_docs", "true", "--limit", "2"])))
        let rows = try JSONValue(parsing: flags)["rows"]?.arrayValue ?? []
        #expect(rows.map { $0["key"] } == [.number(4), .number(3)], "\(flags)")
        #expect(rows.first?["doc"]?["_id"] == "n4", "\(flags)")
        // Alone before the view's name, which is not taken for its value.
        let grouped = try output(["query", "--group", "numbers/count"])
        #expect(grouped == (try output(["query", "numbers/count", "--group", "true"])))
        #expect(grouped == #"{"rows":[{"key":0,"value":2},{"key":1,"value":2}]}"# + "\n")
        // A value still follows when given, in any case, or after `=`.
        #expect(try output(["query", "numbers/by_n", "--descending", "FALSE", "--limit", "1"]).contains(#""key":1"#))
        #expect(try output(["query", "numbers/by_n", "--descending=false", "--limit", "1"]).contains(#""key":1"#))
        #expect(try output(["query", "numbers/count", "--group", "false"]) == #"{"rows":[{"key":null,"value":4}]}"# + "\n")
        #expect(try output(["query", "numbers/count", "--reduce", "--group"]) == grouped)
        #expect(try output(["all-docs", "--descending", "--limit", "1"]).contains(#""id":"n4""#))
    }

    // CouchDB's names are those of parse_param/4 in src/couch_mrview/src/couch_mrview_http.erl;
    // the kebab-case spellings are the command line's own, taken next to them.
    @Test("Kebab-case spellings are accepted next to CouchDB's names: --group-level, --include-docs, --start-key")
    func kebabCaseNames() throws {
        let fixture = try CommandLineFixture()
        func output(_ arguments: [String]) throws -> String {
            let outcome = try fixture.run(["--db", fixture.db] + arguments)
            #expect(outcome.exitStatus == 0, "\(arguments): \(outcome.standardError)")
            return outcome.standardOutput
        }
        #expect(try output(["query", "numbers/by_n", "--start-key", "2", "--end-key", "3", "--include-docs"])
                == (try output(["query", "numbers/by_n", "--start_key", "2", "--end_key", "3", "--include_docs", "true"])))
        #expect(try output(["query", "numbers/by_n", "--start-key", "2", "--end-key", "3", "--inclusive-end", "false"]).contains(#""rows":[{"id":"n2""#))
        #expect(try output(["query", "numbers/count", "--group-level", "1"]) == (try output(["query", "numbers/count", "--group_level", "1"])))
        #expect(try output(["query", "numbers/by_n", "--update-seq", "--limit", "0"]).contains(#""update_seq""#))
        #expect(try output(["all-docs", "--start-key", #""n3""#, "--include-docs"]).contains(#""doc":{"_id":"n3""#))
    }

    // _all_docs is a map without reduce: grouping and reduce are refused on it as on
    // any map view (validate_args/1, src/couch_mrview/src/couch_mrview_util.erl:
    // "Invalid use of grouping on a map view.", "Reduce is invalid for map-only views."),
    // and it has no index to update (update, stale, stable).
    @Test("all-docs --help lists only the options that apply to _all_docs")
    func allDocsHelp() throws {
        let fixture = try CommandLineFixture(documents: 0)
        func options(_ arguments: [String]) throws -> Set<String> {
            let outcome = try fixture.run(arguments)
            #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
            return Set(outcome.standardOutput.matches(of: /--[a-z][a-z_-]*/).map { String($0.output.dropFirst(2)) })
        }
        let allDocs = try options(["all-docs", "--help"])
        for applies in ["key", "keys", "startkey", "start_key", "endkey", "end_key", "inclusive_end", "descending", "limit", "skip",
                        "include_docs", "conflicts", "update_seq", "start-key", "include-docs"] {
            #expect(allDocs.contains(applies), "--\(applies)")
        }
        for doesNotApply in ["group", "group_level", "group-level", "reduce", "update", "stale", "stable", "sorted",
                             "startkey_docid", "start_key_doc_id", "endkey_docid", "end_key_doc_id"] {
            #expect(!allDocs.contains(doesNotApply), "--\(doesNotApply)")
        }
        let query = try options(["query", "--help"])
        for viewOnly in ["group", "group_level", "reduce", "update", "stale", "startkey_docid"] {
            #expect(query.contains(viewOnly), "query --\(viewOnly)")
        }
        let refused = try fixture.run(["--db", fixture.db, "all-docs", "--group"])
        #expect(refused.exitStatus == 64)
        #expect(try JSONValue(parsing: refused.standardError)["reason"] == "Unknown option '--group'", "\(refused.standardError)")
    }
}

@Suite("The settee tool's errors and usage", .ownThread)
struct CommandLineErrorTests {
    /// The single JSON object a failed command printed on standard error.
    private func report(_ outcome: ChildProcess.Outcome, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
        let lines = outcome.standardError.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(outcome.standardError)", sourceLocation: sourceLocation)
        let report = try JSONValue(parsing: outcome.standardError)
        #expect(report["error"]?.stringValue != nil && report["reason"]?.stringValue != nil, "\(report)", sourceLocation: sourceLocation)
        return report
    }

    @Test("Every command reports an error as one JSON object on standard error and exits non-zero: design load, get, info, a bad option")
    func errorsAreJSON() throws {
        let fixture = try CommandLineFixture(documents: 1)
        let broken = fixture.directory.file("broken.json", contents: #"""
            {"_id": "_design/broken", "views": {
              "v": {"map": "function (doc) {\n  emit(doc._id\n}"}}}
            """#)
        let load = try fixture.run(["--db", fixture.db, "design", "load", broken.path])
        #expect(load.exitStatus == 1)
        let loadReport = try report(load)
        #expect(loadReport["error"] == "invalid_design_document", "\(loadReport)")
        let problem = loadReport["problems"]?[0]
        #expect(problem?["file"] == .string(broken.path), "\(loadReport)")
        #expect(problem?["id"] == "_design/broken", "\(loadReport)")
        #expect(problem?["view"] == "v", "\(loadReport)")
        #expect(problem?["line"]?.doubleValue != nil, "\(loadReport)")

        let missing = try fixture.run(["--db", fixture.db, "get", "nope"])
        #expect(missing.exitStatus == 1)
        #expect(try report(missing) == ["error": "not_found", "reason": "missing", "id": "nope"] as JSONValue)

        let noDatabase = try fixture.run(["--db", fixture.directory.url.appendingPathComponent("none").path, "info"])
        #expect(noDatabase.exitStatus == 1)
        #expect(try report(noDatabase)["error"] == "not_found", "\(noDatabase.standardError)")

        let badOption = try fixture.run(["--db", fixture.db, "query", "numbers/by_n", "--limt", "1"])
        #expect(badOption.exitStatus == 64)
        let usage = try report(badOption)
        #expect(usage["error"] == "bad_request")
        #expect(usage["reason"] == "Unknown option '--limt'. Did you mean '--limit'?", "\(usage)")
        #expect(usage["usage"]?.stringValue?.hasPrefix("settee query [<options>] <view> --db <path>") == true, "\(usage)")

        let badQuery = try fixture.run(["--db", fixture.db, "query", "numbers/by_n", "--reduce"])
        #expect(badQuery.exitStatus == 1)
        #expect(try report(badQuery) == ["error": "query_parse_error", "reason": "Reduce is invalid for map-only views."] as JSONValue)
    }

    @Test("The usage line shows --db as required by the commands that need it, and not on couchjs")
    func databaseRequiredInUsage() throws {
        let fixture = try CommandLineFixture(documents: 0)
        for command in [["info"], ["query"], ["design", "load"], ["all-docs"], ["import"]] {
            let help = try fixture.run(command + ["--help"])
            let usage = help.standardOutput.split(separator: "\n").first { $0.hasPrefix("USAGE:") } ?? ""
            // ArgumentParser writes a long usage line as `[<options>]` and the required ones.
            #expect(usage.hasPrefix("USAGE: settee \(command.joined(separator: " ")) "), "\(usage)")
            #expect(usage.contains(" --db <path>") && !usage.contains("[--db"), "\(usage)")
        }
        #expect(try !fixture.run(["couchjs", "--help"]).standardOutput.contains("--db"))
        let missing = try fixture.run(["info"])
        #expect(missing.exitStatus == 64)
        #expect(try report(missing)["reason"] == "Missing expected argument '--db <path>'", "\(missing.standardError)")
        // The database options may still come before the subcommand.
        #expect(try fixture.run(["--db", fixture.db, "--busy-timeout", "2", "info"]).exitStatus == 0)
        #expect(try fixture.run(["--db=\(fixture.db)", "-v", "design", "load", fixture.directory.url.appendingPathComponent("numbers.json").path]).exitStatus == 0)
    }
}
