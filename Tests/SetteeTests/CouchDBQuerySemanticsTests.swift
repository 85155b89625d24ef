import Foundation
import Testing
import Settee

/// A database with one design document, for the query cases where Settee must
/// answer as CouchDB 3.5 does (each test names the CouchDB source it follows).
private struct SemanticsFixture {
    let directory = TemporaryDirectory()
    let db: Database

    init(views: String, documents: [String]) throws {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let design = #"{"_id": "_design/t", "views": \#(views)}"#
        try db.loadDesignDocuments(from: directory.file("design.json", contents: design))
        _ = try db.importDocuments(Data(documents.joined(separator: "\n").utf8))
    }

    func query(_ view: String, _ parameters: [(String, String)]) throws -> ViewResult {
        try db.query("t/" + view, options: ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) }))
    }

    func ids(_ view: String, _ parameters: [(String, String)]) throws -> [String] {
        try query(view, parameters).rows.compactMap(\.id)
    }

    func allDocuments(_ parameters: [(String, String)]) throws -> ViewResult {
        try db.allDocuments(options: ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) }))
    }
}

/// Nine documents d0…d8 whose key is their number modulo 3: key 0 is d0, d3, d6.
private func modulo() throws -> SemanticsFixture {
    try SemanticsFixture(
        views: #"{"byk": {"map": "function (doc) { emit(doc.k, null); }"}}"#,
        documents: (0..<9).map { #"{"_id": "d\#($0)", "k": \#($0 % 3)}"# })
}

/// The issue's reproducer: seven documents, `k` is x, y, z, …; `v` is `emit(doc.k, doc.n)` with `_sum`.
private func seven() throws -> SemanticsFixture {
    let keys = ["x", "y", "z", "za", "zb", "zc", "zd"]
    return try SemanticsFixture(
        views: #"{"v": {"map": "function (doc) { emit(doc.k, doc.n); }", "reduce": "_sum"}}"#,
        documents: keys.enumerated().map { #"{"_id": "d\#($0.offset)", "k": "\#($0.element)", "n": 1}"# })
}

@Suite("Queries answer as CouchDB 3.5 does", .ownThread)
struct CouchDBQuerySemanticsTests {
    // couch_mrview_util:key_opts/2: each key of `keys` is a range from {K, startkey_docid} to {K, endkey_docid}.
    @Test("keys with startkey_docid and endkey_docid: per key, only the rows whose id is within the bounds")
    func keysWithDocIDBounds() throws {
        let fixture = try modulo()
        #expect(try fixture.ids("byk", [("keys", "[0,2]"), ("startkey_docid", "d3"), ("endkey_docid", "d5")]) == ["d3", "d5"])
        #expect(try fixture.ids("byk", [("keys", "[0,2]"), ("startkey_docid", "d4")]) == ["d6", "d5", "d8"])
        #expect(try fixture.ids("byk", [("keys", "[0,2]"), ("endkey_docid", "d4")]) == ["d0", "d3", "d2"])
        #expect(try fixture.ids("byk", [("keys", "[0,2]"), ("descending", "true"), ("startkey_docid", "d5"), ("endkey_docid", "d3")])
                == ["d5", "d3"])
    }

    // fabric_view_map:go/8 reverses `keys` for descending=true (each key's rows descending too).
    @Test("keys with descending=true answer the keys in reverse order")
    func keysDescending() throws {
        let fixture = try modulo()
        #expect(try fixture.ids("byk", [("keys", "[0,2]"), ("descending", "true")]) == ["d8", "d5", "d2", "d6", "d3", "d0"])
        #expect(try fixture.ids("byk", [("keys", "[0,2]"), ("descending", "true"), ("limit", "2")]) == ["d8", "d5"])
    }

    // couch_mrview_util:ekey_opts/1: with inclusive_end=false each key's range ends before {K, <<>>}: nothing.
    @Test("keys with inclusive_end=false match nothing, as key= does")
    func keysExclusiveEnd() throws {
        let fixture = try seven()
        #expect(try fixture.query("v", [("reduce", "false"), ("keys", #"["x","y"]"#), ("inclusive_end", "false")]).rows.isEmpty)
        #expect(try fixture.query("v", [("reduce", "false"), ("key", #""x""#), ("inclusive_end", "false")]).rows.isEmpty)
    }

    // couch_mrview_updater:insert_results/5 sorts a document's {Key, Value} pairs (Erlang term order),
    // and couch_mrview_util:expand_dups/2 gives equal keys' rows in that order.
    @Test("One document emitting the same key several times gives its rows sorted by value")
    func duplicateKeysSortedByValue() throws {
        let fixture = try SemanticsFixture(
            views: #"""
                {"dups": {"map": "function (doc) { emit('k', 'multiple values!'); emit('k', 'crayon!'); emit('k', null); emit('k', 'crayon!'); emit('j', 2); emit('j', [1]); emit('j', {\"a\": 1}); emit('j', true); emit('j', false); emit('j', 1); }"}}
                """#,
            documents: [#"{"_id": "a"}"#])
        #expect(try fixture.query("dups", [("key", #""k""#)]).rows.map(\.valueJSON) == [#"null"#, #""crayon!""#, #""crayon!""#, #""multiple values!""#])
        #expect(try fixture.query("dups", [("key", #""k""#), ("skip", "1"), ("limit", "2")]).rows.map(\.valueJSON) == [#""crayon!""#, #""crayon!""#])
        // couch_mrview_util:fold/4 expands a key's values in that order whichever way the query walks.
        try fixture.db.put(#"{"_id": "b"}"#)
        let descending = try fixture.query("dups", [("key", #""k""#), ("descending", "true")]).rows
        #expect(descending.map(\.id) == ["b", "b", "b", "b", "a", "a", "a", "a"])
        #expect(descending.map(\.valueJSON) == [#"null"#, #""crayon!""#, #""crayon!""#, #""multiple values!""#,
                                                #"null"#, #""crayon!""#, #""crayon!""#, #""multiple values!""#])
        #expect(try fixture.query("dups", [("key", #""k""#), ("descending", "true"), ("skip", "1"), ("limit", "2")]).rows.map(\.valueJSON)
                == [#""crayon!""#, #""crayon!""#])
        #expect(try fixture.query("dups", [("descending", "true"), ("limit", "1")]).rows.map(\.valueJSON) == [#"null"#])
        // Erlang's order: numbers, then the atoms false, null, true, then objects (tuples), then arrays (lists), then strings.
        #expect(try fixture.query("dups", [("key", #""j""#), ("endkey_docid", "a")]).rows.map(\.valueJSON) == ["1", "2", "false", "true", #"{"a":1}"#, "[1]"])
    }

    // fabric_view_all_docs:go/5 sends `{offset, null}` with `keys`.
    @Test("_all_docs with keys that include missing or deleted documents says offset null")
    func allDocsKeysOffsetNull() throws {
        let fixture = try seven()
        try fixture.db.delete("d1", revision: nil)
        let result = try fixture.allDocuments([("keys", #"["d0","d1","nope"]"#)])
        // Seven documents and the design document, one deleted.
        #expect(result.json.hasPrefix(#"{"total_rows":7,"offset":null,"rows":["#))
        #expect(result.rows.map(\.keyJSON) == [#""d0""#, #""d1""#, #""nope""#])
        #expect(result.rows.map(\.error) == [nil, nil, "not_found"])
    }

    // fabric_view_all_docs:go/5 reverses `keys` for descending=true.
    @Test("_all_docs with keys and descending=true answers the keys in reverse order")
    func allDocsKeysDescending() throws {
        let fixture = try seven()
        #expect(try fixture.allDocuments([("keys", #"["d0","d2"]"#), ("descending", "true")]).rows.map(\.keyJSON) == [#""d2""#, #""d0""#])
    }

    // couch_mrview_util:all_docs_key_opts/2 passes a non-string key to the id B-tree, where every
    // non-string term sorts before every id (Erlang term order: binaries last).
    @Test("_all_docs with a non-string key, startkey or endkey: the bound sorts before every id")
    func allDocsNonStringBounds() throws {
        let fixture = try seven()
        #expect(try fixture.allDocuments([("key", "1")]).rows.isEmpty)
        #expect(try fixture.allDocuments([("key", "[]")]).rows.isEmpty)
        #expect(try fixture.allDocuments([("endkey", "1")]).rows.isEmpty)
        // Seven documents and the design document.
        #expect(try fixture.allDocuments([("startkey", "1")]).rows.count == 8)
        #expect(try fixture.allDocuments([("startkey", "{}"), ("endkey", #""d1""#)]).rows.compactMap(\.id) == ["_design/t", "d0", "d1"])
        let reversed = try fixture.allDocuments([("descending", "true"), ("startkey", "1")])
        #expect(reversed.rows.isEmpty && reversed.offset == 8)
        #expect(try fixture.allDocuments([("descending", "true"), ("endkey", "1")]).rows.count == 8)
    }

    // fabric_view_all_docs:open_doc_int/5: an id that cannot be a document's is not found.
    @Test("_all_docs with keys [\"\"] and a document read of \"\" say not_found")
    func emptyID() throws {
        let fixture = try seven()
        let result = try fixture.allDocuments([("keys", #"[""]"#)])
        #expect(result.rows.count == 1 && result.rows[0].error == "not_found" && result.rows[0].keyJSON == #""""#)
        #expect(try fixture.db.document("") == nil)
        #expect(try fixture.db.document(String(repeating: "x", count: 600)) == nil)
        let db = fixture.directory.url.appendingPathComponent("db").path
        let outcome = try SetteeExecutable.find().run(["--db", db, "get", ""], in: fixture.directory.url)
        #expect(outcome.standardError.contains(#"{"error":"not_found","reason":"missing","id":""}"#), "\(outcome.standardError)")
    }

    // fabric_view_map:handle_message/3 ({meta, …}): offset is min(total_rows, offset + skip).
    @Test("offset when skip passes the end is total_rows")
    func offsetSkipPastEnd() throws {
        let fixture = try seven()
        let result = try fixture.query("v", [("reduce", "false"), ("skip", "10")])
        #expect(result.offset == 7 && result.rows.isEmpty)
        #expect(try fixture.query("v", [("reduce", "false"), ("startkey", #""z""#), ("skip", "10")]).offset == 7)
        #expect(try fixture.allDocuments([("skip", "10")]).offset == 8, "seven documents and the design document")
    }

    // couch_mrview:map_fold/3 sets the offset at the first row the folds reach (the workers do not skip),
    // else couch_mrview:map_fold/5 reports the last key's fold; fabric_view_map adds skip.
    @Test("offset of keys queries: the first row found's position plus skip, or the last key's position")
    func offsetOfKeys() throws {
        let fixture = try seven()
        #expect(try fixture.query("v", [("reduce", "false"), ("keys", #"["nope","zz"]"#)]).offset == 7)
        #expect(try fixture.query("v", [("reduce", "false"), ("keys", #"["nope","z","y"]"#)]).offset == 2)
        #expect(try fixture.query("v", [("reduce", "false"), ("keys", #"["nope","z","y"]"#), ("skip", "1")]).offset == 3)
        #expect(try fixture.query("v", [("reduce", "false"), ("keys", #"["y","nope"]"#), ("descending", "true")]).offset == 5)
    }

    // couch_mrview_http:parse_param/4: keys=[K] sets start_key and end_key to K, as key=K does; the later parameter wins.
    @Test("A one-element keys with key, startkey or endkey: the parameter given later wins")
    func singleKeysAndBounds() throws {
        let fixture = try seven()
        let keys = { (parameters: [(String, String)]) in try fixture.query("v", [("reduce", "false")] + parameters).rows.map(\.keyJSON) }
        #expect(try keys([("endkey", #""z""#), ("keys", #"["x"]"#)]) == [#""x""#])
        #expect(try keys([("startkey", #""z""#), ("keys", #"["x"]"#)]) == [#""x""#])
        #expect(try keys([("keys", #"["x"]"#), ("endkey", #""y""#)]) == [#""x""#, #""y""#])
        #expect(try keys([("key", #""y""#), ("keys", #"["x"]"#)]) == [#""x""#])
    }

    // couch_mrview_http:parse_param/4 applies parameters in the order given: so does `settee query`.
    @Test("settee query applies its options in the order given on the command line")
    func commandLineOrder() throws {
        let fixture = try seven()
        let settee = try SetteeExecutable.find()
        let db = fixture.directory.url.appendingPathComponent("db").path
        func keys(_ arguments: [String]) throws -> String {
            let outcome = try settee.run(["--db", db, "query", "--reduce", "false"] + arguments + ["t/v"], in: fixture.directory.url)
            #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
            let body = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
            let rows = body?["rows"] as? [[String: Any]] ?? []
            return rows.compactMap { $0["key"] as? String }.joined(separator: ",")
        }
        #expect(try keys(["--endkey", #""z""#, "--keys", #"["x"]"#]) == "x")
        #expect(try keys(["--startkey=\"z\"", "--keys", #"["x"]"#]) == "x")
        #expect(try keys(["--keys", #"["x"]"#, "--endkey", #""y""#]) == "x,y")
        #expect(try keys(["--end-key", #""z""#, "--keys", #"["x"]"#]) == "x")
        #expect(try keys(["--keys", #"["x"]"#, "--end-key=\"y\""]) == "x,y")
    }

    // couch_mrview:red_fold/4 folds each key of `keys` on its own: a group never spans two keys.
    @Test("Duplicate keys in a grouped reduce give a row each; equal groups around a key with no rows stay apart")
    func groupedReduceDuplicateKeys() throws {
        let fixture = try seven()
        #expect(try fixture.query("v", [("group", "true"), ("keys", #"["x","x"]"#)]).rows.map(\.valueJSON) == ["1", "1"])
        #expect(try fixture.query("v", [("group", "true"), ("keys", #"["x","nope","x"]"#)]).rows.map(\.valueJSON) == ["1", "1"])
    }

    // couch_btree:reduce_stream_kv_node2/8: a group's key is the first key the fold reaches in it,
    // also where a stored chunk of rows (a B-tree node there) begins the group.
    @Test("A group of collation-equal keys shows its first row's key")
    func groupKeyIsFirstRows() throws {
        // Ids interleave the spellings; the first and last rows spell their keys as no other row does,
        // so a stored chunk starting a group at either end ends with another spelling.
        let spellings = [#""ab""#, #""a\u200bb""#, #""a\u0000\u0000b""#, #""e\u0301""#, #""é""#]
        var documents = [#"{"_id": "c-first", "k": "a\u0000b", "n": 1}"#, #"{"_id": "czzz", "k": "e\u0301\u200b", "n": 1}"#]
        for copy in 0..<500 {
            for (index, key) in spellings.enumerated() {
                documents.append(#"{"_id": "c\#(String(format: "%04d", copy))-\#(index)", "k": \#(key), "n": 1}"#)
            }
        }
        let fixture = try SemanticsFixture(
            views: #"{"v": {"map": "function (doc) { emit(doc.k, doc.n); }", "reduce": "_sum"}}"#, documents: documents)
        // The groups' first rows, as a map query reaches them: spellings 0-2 and c-first are one key, the rest the other.
        func firstKeys(_ parameters: [(String, String)]) throws -> [String] {
            var firsts: [String] = []
            var previous: Bool?
            for row in try fixture.query("v", [("reduce", "false")] + parameters).rows {
                let group = row.id == "c-first" || (row.id != "czzz" && row.id!.last! < "3")
                if group != previous { firsts.append(row.keyJSON) }
                previous = group
            }
            return firsts
        }
        let ascending = try fixture.query("v", [("group", "true")])
        #expect(ascending.rows.map(\.keyJSON) == (try firstKeys([])))
        #expect(ascending.rows.map(\.valueJSON) == ["1501", "1001"])
        let descending = try fixture.query("v", [("group", "true"), ("descending", "true")])
        #expect(descending.rows.map(\.keyJSON) == (try firstKeys([("descending", "true")])))
    }
}
