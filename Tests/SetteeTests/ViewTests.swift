import Foundation
import Testing
import Logging
import SetteeCore
import SetteeViews
@testable import Settee

/// A database with a design document loaded from a file, for view tests.
private struct ViewFixture {
    let directory = TemporaryDirectory()
    let db: Database

    init(_ designDocuments: [String] = []) throws {
        var options = Database.Options()
        options.javaScriptWorkers = 2
        db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        for (index, design) in designDocuments.enumerated() {
            try db.loadDesignDocuments(from: directory.file("design\(index).json", contents: design))
        }
    }

    func query(_ view: String, _ parameters: [(String, String)] = []) throws -> ViewResult {
        try db.query(view, options: ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) }))
    }

    func keys(_ view: String, _ parameters: [(String, String)] = []) throws -> [String] {
        try query(view, parameters).rows.map(\.keyJSON)
    }
}

private func design(_ name: String, _ views: String, options: String = "{}") -> String {
    #"{"_id": "_design/\#(name)", "options": \#(options), "views": \#(views)}"#
}

private let numbersDesign = design("numbers", #"""
    {
      "by_n": {"map": "function (doc) { if (typeof doc.n === 'number') emit(doc.n, doc._id); }"},
      "count": {"map": "function (doc) { if (typeof doc.n === 'number') emit(doc.n, 1); }", "reduce": "_count"},
      "sum": {"map": "function (doc) { if (typeof doc.n === 'number') emit([doc.n % 2, doc.n % 3, doc.n], doc.n); }", "reduce": "_sum"},
      "js_sum": {"map": "function (doc) { if (typeof doc.n === 'number') emit(doc.n % 2, doc.n); }",
                 "reduce": "function (keys, values, rereduce) { return sum(values); }"}
    }
    """#)

private func putNumbers(_ db: Database, _ range: ClosedRange<Int>) throws {
    let lines = range.map { #"{"_id": "n\#(String(format: "%04d", $0))", "n": \#($0)}"# }
    _ = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
}

@Suite("Views")
struct ViewTests {
    @Test("A map view returns rows in key order with CouchDB's response shape")
    func mapQuery() throws {
        let fixture = try ViewFixture([numbersDesign])
        try putNumbers(fixture.db, 1...5)
        let result = try fixture.query("numbers/by_n")
        #expect(result.json == #"{"total_rows":5,"offset":0,"rows":[{"id":"n0001","key":1,"value":"n0001"},{"id":"n0002","key":2,"value":"n0002"},{"id":"n0003","key":3,"value":"n0003"},{"id":"n0004","key":4,"value":"n0004"},{"id":"n0005","key":5,"value":"n0005"}]}"#)
    }

    @Test("Each query parameter on a map view")
    func mapParameters() throws {
        let fixture = try ViewFixture([numbersDesign])
        try putNumbers(fixture.db, 1...10)
        let view = "numbers/by_n"
        #expect(try fixture.keys(view, [("key", "3")]) == ["3"])
        #expect(try fixture.keys(view, [("keys", "[7,2,99,2]")]) == ["7", "2", "2"])
        #expect(try fixture.keys(view, [("startkey", "8")]) == ["8", "9", "10"])
        #expect(try fixture.keys(view, [("start_key", "8")]) == ["8", "9", "10"])
        #expect(try fixture.keys(view, [("endkey", "2")]) == ["1", "2"])
        #expect(try fixture.keys(view, [("end_key", "2"), ("inclusive_end", "false")]) == ["1"])
        #expect(try fixture.keys(view, [("descending", "true"), ("limit", "3")]) == ["10", "9", "8"])
        #expect(try fixture.keys(view, [("descending", "true"), ("startkey", "3")]) == ["3", "2", "1"])
        #expect(try fixture.keys(view, [("descending", "true"), ("startkey", "5"), ("endkey", "3"), ("inclusive_end", "false")]) == ["5", "4"])
        #expect(try fixture.keys(view, [("skip", "8")]) == ["9", "10"])
        #expect(try fixture.keys(view, [("limit", "0")]) == [])
        let skipped = try fixture.query(view, [("startkey", "4"), ("skip", "2"), ("limit", "2")])
        #expect(skipped.rows.map(\.keyJSON) == ["6", "7"])
        #expect(skipped.offset == 5, "offset counts the rows before the first returned, skipped ones included")
        #expect(skipped.totalRows == 10)
        #expect(try fixture.query(view, [("update_seq", "true")]).updateSequence == 11, "10 documents and the design document")
    }

    @Test("startkey_docid and endkey_docid pick among rows with equal keys")
    func docIDBounds() throws {
        let fixture = try ViewFixture([design("same", #"{"all": {"map": "function (doc) { emit('k', null); }"}}"#)])
        for id in ["a", "b", "c", "d"] { try fixture.db.put(#"{"_id": "\#(id)"}"#) }
        let ids = { (parameters: [(String, String)]) in try fixture.query("same/all", parameters).rows.compactMap(\.id) }
        #expect(try ids([("startkey", #""k""#), ("startkey_docid", "b")]) == ["b", "c", "d"])
        #expect(try ids([("endkey", #""k""#), ("endkey_docid", "c")]) == ["a", "b", "c"])
        #expect(try ids([("endkey", #""k""#), ("endkey_docid", "c"), ("inclusive_end", "false")]) == ["a", "b"])
        #expect(try ids([("descending", "true"), ("startkey", #""k""#), ("startkey_docid", "c")]) == ["c", "b", "a"])
    }

    @Test("Validation errors are CouchDB's, word for word")
    func validationErrors() throws {
        let fixture = try ViewFixture([numbersDesign])
        func reason(_ view: String, _ parameters: [(String, String)]) throws -> String {
            try #require(throws: QueryError.self) { try fixture.query(view, parameters) }.reason
        }
        #expect(try reason("numbers/by_n", [("reduce", "true")]) == "Reduce is invalid for map-only views.")
        #expect(try reason("numbers/by_n", [("group", "true")]) == "Invalid use of grouping on a map view.")
        #expect(try reason("numbers/by_n", [("key", "1"), ("keys", "[1,2]")]) == "`keys` is incompatible with `key`, `start_key` and `end_key`")
        #expect(try reason("numbers/count", [("include_docs", "true")]) == "`include_docs` is invalid for reduce")
        #expect(try reason("numbers/count", [("group", "false"), ("group_level", "1")]) == "Can't specify group=false and group_level>0 at the same time")
        #expect(try reason("numbers/by_n", [("startkey", "5"), ("endkey", "1")]) == "No rows can match your key range, reverse your start_key and end_key or set descending=true")
        let missing = try #require(throws: DocumentError.self) { try fixture.query("numbers/nope") }
        #expect(missing.reason == "missing_named_view")
    }

    @Test("Built-in reduce, group and group_level on array keys")
    func reduceAndGrouping() throws {
        let fixture = try ViewFixture([numbersDesign])
        try putNumbers(fixture.db, 1...12)
        #expect(try fixture.query("numbers/count").json == #"{"rows":[{"key":null,"value":12}]}"#)
        #expect(try fixture.query("numbers/count", [("startkey", "3"), ("endkey", "5")]).rows.map(\.valueJSON) == ["3"])
        #expect(try fixture.query("numbers/count", [("reduce", "false"), ("limit", "2")]).rows.map(\.keyJSON) == ["1", "2"])
        let level1 = try fixture.query("numbers/sum", [("group_level", "1")])
        #expect(level1.rows.map { [$0.keyJSON, $0.valueJSON] } == [["[0]", "42"], ["[1]", "36"]])
        let level2 = try fixture.query("numbers/sum", [("group_level", "2")])
        #expect(level2.rows.map(\.keyJSON) == ["[0,0]", "[0,1]", "[0,2]", "[1,0]", "[1,1]", "[1,2]"])
        #expect(level2.rows.map(\.valueJSON) == ["18", "14", "10", "12", "8", "16"])
        let exact = try fixture.query("numbers/sum", [("group", "true"), ("limit", "2")])
        #expect(exact.rows.map(\.keyJSON) == ["[0,0,6]", "[0,0,12]"])
        let descending = try fixture.query("numbers/sum", [("group_level", "1"), ("descending", "true")])
        #expect(descending.rows.map(\.keyJSON) == ["[1]", "[0]"])
    }

    @Test("A JavaScript reduce is rereduced over chunks of rows")
    func javaScriptRereduce() throws {
        let fixture = try ViewFixture([numbersDesign])
        try putNumbers(fixture.db, 1...2500)
        let total = try fixture.query("numbers/js_sum")
        #expect(total.rows.map(\.valueJSON) == ["\(2500 * 2501 / 2)"])
        let grouped = try fixture.query("numbers/js_sum", [("group", "true")])
        #expect(grouped.rows.map(\.valueJSON) == ["\(2 * (1...1250).reduce(0, +))", "\((1...1250).reduce(0) { $0 + 2 * $1 - 1 })"])
    }

    // couch_query_servers.erl (os_reduce, os_rereduce) turns the overflow into the group's row.
    @Test("A reduce whose output does not shrink answers a reduce_overflow_error row; the other groups reduce")
    func reduceLimit() throws {
        let fixture = try ViewFixture([design("grow", #"""
            {"all": {"map": "function (doc) { emit(doc.g, doc.pad); }",
                     "reduce": "function (k, values) { return values[0] === 'small' ? values.length : values.join('') + values.join(''); }"}}
            """#)])
        let pad = String(repeating: "x", count: 200)
        for n in 0..<50 { try fixture.db.put(#"{"_id": "d\#(n)", "g": "big", "pad": "\#(pad)"}"#) }
        for n in 0..<2 { try fixture.db.put(#"{"_id": "s\#(n)", "g": "a", "pad": "small"}"#) }
        let result = try fixture.query("grow/all", [("group", "true")])
        #expect(result.rows.count == 2)
        #expect(result.rows[0].valueJSON == "2")
        #expect(result.rows[1].error == "reduce_overflow_error")
        #expect(result.rows[1].reason?.hasPrefix("Reduce output must shrink more rapidly: input size: ") == true)
        #expect(result.json.hasPrefix(#"{"rows":[{"key":"a","value":2},{"key":"big","error":"reduce_overflow_error","reason":"Reduce output must shrink more rapidly: input size: "#))
        let total = try fixture.query("grow/all")
        #expect(total.rows.map(\.error) == ["reduce_overflow_error"])
    }

    @Test("A JavaScript reduce that never reads its keys gives the same results, and reduce_limit counts the keys all the same")
    func reduceWithoutKeys() throws {
        let grow = "values.join('') + values.join('')"
        let fixture = try ViewFixture([design("grow", #"""
            {"unread": {"map": "function (doc) { emit(doc._id, doc.pad); }", "reduce": "function (k, values) { return \#(grow); }"},
             "read": {"map": "function (doc) { emit(doc._id, doc.pad); }", "reduce": "function (k, values) { k; return \#(grow); }"},
             "ids": {"map": "function (doc) { emit(doc._id, 1); }",
                     "reduce": "function (keys, values, rereduce) { return rereduce ? sum(values) : keys.filter(function (k) { return k[1][1] === '\"'; }).length; }"},
             "sum": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "function (keys, values, rereduce) { return sum(values); }"}}
            """#)])
        let pad = String(repeating: "x", count: 200)
        // Ids that JSON escapes count as CouchDB would send them.
        for n in 0..<50 { try fixture.db.put(#"{"_id": "d\"\#(n)\n\u0001", "pad": "\#(pad)"}"#) }
        let unread = try #require(try fixture.query("grow/unread").rows.first?.reason)
        let read = try #require(try fixture.query("grow/read").rows.first?.reason)
        #expect(unread.hasPrefix("Reduce output must shrink more rapidly"))
        #expect(unread == read)
        // Either way, the results are the same.
        #expect(Reducer.readsKeys("function (keys, values, rereduce) { return sum(values); }") == false)
        #expect(try fixture.query("grow/sum").rows.map(\.valueJSON) == ["50"])
        #expect(try fixture.query("grow/ids").rows.map(\.valueJSON) == ["50"])
        #expect(try fixture.query("grow/sum", [("group", "true")]).rows.map(\.valueJSON) == Array(repeating: "1", count: 50))
        #expect(try fixture.query("grow/ids", [("group", "true")]).rows.map(\.valueJSON) == Array(repeating: "1", count: 50))
    }

    @Test("Which JavaScript reduce functions read their keys")
    func readsKeys() {
        let cases: [(String, Bool)] = [
            ("function (keys, values, rereduce) { return sum(values); }", false),
            ("function(k,v){return sum(v);}", false),
            ("/* sums */ function total (keys, values) {\n  // of keys\n  return values.length; }", true),
            ("/* sums */ function total (keys, values) { return values.length; }", false),
            ("function (keys) { return 1; }", false),
            ("function (keys, values) { return keys.length; }", true),
            ("function (keys, values) { return Object.keys(values).length; }", true),
            ("function (k, v) { return arguments[0].length; }", true),
            ("function (k, v) { return eval('k').length; }", true),
            ("function (k, v) { return new Function('return 1')(); }", true),
            (#"function (keys, values) { return k\u0065ys.length; }"#, true),
            ("function (keys, values = keys) { return values; }", true),
            ("function ({length}, values) { return length; }", true),
            ("function () { return arguments.length; }", true),
            ("(keys, values) => sum(values)", true),
            ("function* (keys, values) { yield 1; }", true),
        ]
        for (source, reads) in cases {
            #expect(Reducer.readsKeys(source) == reads, "\(source)")
        }
    }

    @Test("include_docs returns the emitting document, or the one a value {_id} links to")
    func includeDocs() throws {
        let fixture = try ViewFixture([design("links", #"{"orders": {"map": "function (doc) { if (doc.customer) { emit(doc._id, null); emit([doc._id, 'customer'], {_id: doc.customer}); } }"}}"#)])
        try fixture.db.put(#"{"_id": "alice", "name": "Alice"}"#)
        try fixture.db.put(#"{"_id": "o1", "customer": "alice"}"#)
        try fixture.db.put(#"{"_id": "o2", "customer": "nobody"}"#)
        let rows = try fixture.query("links/orders", [("include_docs", "true")]).rows
        #expect(rows.map(\.id) == ["o1", "o2", "o1", "o2"])
        #expect(try rows[0].document?["_id"] == "o1")
        #expect(try rows[2].document?["name"] == "Alice")
        #expect(rows[2].id == "o1", "the row's id stays the emitting document")
        #expect(rows[3].documentJSON == "null")
    }

    @Test("Incremental updates (edit, delete, re-create) equal a rebuild from scratch")
    func incrementalEqualsRebuild() throws {
        let map = #"{"by_tag": {"map": "function (doc) { (doc.tags || []).forEach(function (t, i) { emit([t, i], doc.v); }); }"}}"#
        let fixture = try ViewFixture([design("tags", map)])
        var revisions: [String: Revision] = [:]
        var generator = SystemRandomNumberGenerator()
        for round in 0..<6 {
            for n in 0..<40 {
                let id = "doc\(n)"
                let action = Int.random(in: 0..<4, using: &generator)
                let tags = (0..<Int.random(in: 0..<4, using: &generator)).map { _ in #""t\#(Int.random(in: 0..<5, using: &generator))""# }
                if action == 0, let revision = revisions[id] {
                    try fixture.db.delete(id, revision: revision)
                    revisions[id] = nil
                } else {
                    let rev = revisions[id].map { #", "_rev": "\#($0)""# } ?? ""
                    revisions[id] = try fixture.db.put(#"{"_id": "\#(id)"\#(rev), "v": \#(round), "tags": [\#(tags.joined(separator: ","))]}"#).revision
                }
            }
            _ = try fixture.query("tags/by_tag")
        }
        let incremental = try fixture.query("tags/by_tag")
        let fresh = try ViewFixture()
        for document in try fixture.db.allDocuments(options: ViewQueryOptions(parameters: [(name: "include_docs", value: "true")])).rows {
            var members = try document.document!.objectValue!.filter { $0.key != "_rev" }
            members.append((key: "copied", value: true))
            try fresh.db.put(JSONValue.object(members).jsonText)
        }
        try fresh.db.loadDesignDocuments(from: fresh.directory.file("d.json", contents: design("tags", map)))
        let rebuilt = try fresh.query("tags/by_tag")
        #expect(incremental.rows.map { [$0.id!, $0.keyJSON, $0.valueJSON] } == rebuilt.rows.map { [$0.id!, $0.keyJSON, $0.valueJSON] })
        #expect(incremental.totalRows == rebuilt.totalRows)
    }

    @Test("Editing one view rebuilds that view only; the other keeps its rows")
    func editOneView() throws {
        // `stamp` emits a random value: if its rows were rewritten, they would change.
        let before = design("pair", #"{"stamp": {"map": "function (doc) { emit(doc._id, Math.random()); }"}, "plain": {"map": "function (doc) { emit(doc._id, 1); }"}}"#)
        let after = design("pair", #"{"stamp": {"map": "function (doc) { emit(doc._id, Math.random()); }"}, "plain": {"map": "function (doc) { emit(doc._id, 2); }"}}"#)
        let fixture = try ViewFixture([before])
        for n in 0..<20 { try fixture.db.put(#"{"_id": "d\#(n)"}"#) }
        let stamps = try fixture.query("pair/stamp").rows.map(\.valueJSON)
        #expect(try fixture.query("pair/plain").rows.allSatisfy { $0.valueJSON == "1" })
        let oldInfo = try fixture.db.viewInfo()

        try fixture.db.loadDesignDocuments(from: fixture.directory.file("edited.json", contents: after))
        #expect(try fixture.query("pair/plain").rows.allSatisfy { $0.valueJSON == "2" })
        #expect(try fixture.query("pair/stamp").rows.map(\.valueJSON) == stamps)
        let newInfo = try fixture.db.viewInfo()
        func signature(_ info: [ViewInfo], _ path: String) -> String? { info.first { $0.path == path }?.signature }
        #expect(signature(newInfo, "pair/stamp") == signature(oldInfo, "pair/stamp"))
        #expect(signature(newInfo, "pair/plain") != signature(oldInfo, "pair/plain"))
        // The old index of `plain` is gone.
        let states = try fixture.db.environment.read { try fixture.db.indexes.allStates(in: $0) }
        #expect(Set(states.map(\.signature)) == Set(newInfo.map(\.signature)))
    }

    @Test("Equal views share one index, across design documents")
    func sharedIndex() throws {
        let view = #"{"v": {"map": "function (doc) { emit(doc._id, null); }"}}"#
        let fixture = try ViewFixture([design("one", view), design("two", view)])
        try fixture.db.put(#"{"_id": "x"}"#)
        _ = try fixture.query("one/v")
        let info = try fixture.db.viewInfo()
        #expect(info.count == 2)
        #expect(info[0].signature == info[1].signature)
        #expect(info.allSatisfy { $0.indexedSequence == 3 })
        let states = try fixture.db.environment.read { try fixture.db.indexes.allStates(in: $0) }
        #expect(states.count == 1)
    }

    @Test("A map function that throws skips that document, and the error is counted")
    func throwingMap() throws {
        let fixture = try ViewFixture([design("t", #"{"v": {"map": "function (doc) { emit(doc.a.b, null); }"}}"#)])
        try fixture.db.put(#"{"_id": "good", "a": {"b": 1}}"#)
        try fixture.db.put(#"{"_id": "bad"}"#)
        #expect(try fixture.query("t/v").rows.map(\.id) == ["good"])
        #expect(try fixture.db.viewInfo().first?.mapErrors == 1)
    }

    @Test("Map errors spread over large batches are logged with the ids of the documents that raised them, built afresh and updated")
    func mapErrorsNameTheirDocuments() throws {
        let log = CapturedLog()
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 2
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options, logger: log.logger())
        let map = "function (doc) { if (doc.n % 97 === 5) throw new Error('no ' + doc._id); emit(doc.n, null); }"
        try db.loadDesignDocuments(from: directory.file("e.json", contents: design("e", #"{"v": {"map": "\#(map)"}}"#)))
        func loggedIDs() -> [String] {
            // CouchDB's words (share/server/views.js handleViewError): "function raised exception … with doc._id …".
            log.entries.filter { $0.message.hasPrefix("function raised exception (new Error(\"no ") && $0.message.hasSuffix(" with doc._id " + ($0.metadata["doc.id"] ?? "?")) }
                .compactMap { $0.metadata["doc.id"] }
        }
        func expectedIDs(_ range: ClosedRange<Int>) -> [String] {
            range.filter { $0 % 97 == 5 }.map { "n" + String(format: "%04d", $0) }
        }
        // Thousands of documents: each batch is mapped in many slices at once.
        try putNumbers(db, 0...2999)
        let first = try db.query("e/v", options: ViewQueryOptions(parameters: [])).rows
        #expect(first.count == 3000 - expectedIDs(0...2999).count)
        #expect(loggedIDs().sorted() == expectedIDs(0...2999))
        #expect(try db.viewInfo().first?.mapErrors == expectedIDs(0...2999).count)
        // More documents, mapped as an update.
        try putNumbers(db, 3000...3999)
        _ = try db.query("e/v", options: ViewQueryOptions(parameters: []))
        #expect(loggedIDs().sorted() == expectedIDs(0...3999))
        #expect(try db.viewInfo().first?.mapErrors == expectedIDs(0...3999).count)
    }

    @Test("An update ends with a line of its documents and the CPU time of each stage (the chunks' JS reduce calls too): info for a build, debug for a few changes")
    func indexedLine() throws {
        let log = CapturedLog()
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 2
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options, logger: log.logger(level: .debug))
        // Work enough in each map call that mapping clearly outweighs reading, in a debug build too.
        let map = "function (doc) { var s = 0; for (var i = 0; i < 2000; i++) s += i % 7; emit(doc.n, s > 0 ? 1 : 0); }"
        let reduce = "function (keys, values, rereduce) { return sum(values); }"
        try db.loadDesignDocuments(from: directory.file("c.json", contents: design("c", #"{"v": {"map": "\#(map)", "reduce": "\#(reduce)"}}"#)))
        func indexed() throws -> CapturedLog.Entry {
            try #require(log.entries.last { $0.message == "indexed" })
        }
        func seconds(_ entry: CapturedLog.Entry, _ key: String) -> Double {
            entry.metadata[key].flatMap(Double.init) ?? -1
        }
        try putNumbers(db, 0...2999)
        _ = try db.query("c/v", options: ViewQueryOptions(parameters: []))
        let build = try indexed()
        #expect(build.level == .info)
        // The design document is one of the changes.
        #expect(build.metadata["documents"] == "3001")
        for stage in ["cpu.reading", "cpu.mapping", "cpu.gathering", "cpu.writing", "cpu.reducing", "seconds"] { #expect(seconds(build, stage) > 0, "\(stage)") }
        #expect(seconds(build, "cpu.other") >= 0)
        // Mapping the documents takes more than reading them.
        #expect(seconds(build, "cpu.mapping") > seconds(build, "cpu.reading"))

        try putNumbers(db, 3000...3000)
        _ = try db.query("c/v", options: ViewQueryOptions(parameters: []))
        let update = try indexed()
        #expect(update.level == .debug)
        #expect(update.metadata["documents"] == "1")
        #expect(seconds(update, "cpu.mapping") > 0)
    }

    @Test("Design documents are not mapped unless include_design")
    func includeDesign() throws {
        let map = #"{"ids": {"map": "function (doc) { emit(doc._id, null); }"}}"#
        let fixture = try ViewFixture([design("plain", map), design("all", map, options: #"{"include_design": true}"#)])
        try fixture.db.put(#"{"_id": "x"}"#)
        #expect(try fixture.query("plain/ids").rows.map(\.id) == ["x"])
        #expect(try fixture.query("all/ids").rows.map(\.id) == ["_design/all", "_design/plain", "x"])
    }

    @Test("Keys past LMDB's 511-byte limit still sort and match")
    func longKeys() throws {
        let fixture = try ViewFixture([design("long", #"{"v": {"map": "function (doc) { emit([doc.p, doc.n], null); }"}}"#)])
        let prefix = String(repeating: "k", count: 700)
        for n in [5, 1, 3, 2, 4] {
            try fixture.db.put(#"{"_id": "d\#(n)", "p": "\#(prefix)", "n": \#(n)}"#)
        }
        try fixture.db.put(#"{"_id": "short", "p": "a", "n": 0}"#)
        try fixture.db.put(#"{"_id": "after", "p": "z", "n": 0}"#)
        #expect(try fixture.query("long/v").rows.compactMap(\.id) == ["short", "d1", "d2", "d3", "d4", "d5", "after"])
        #expect(try fixture.query("long/v", [("descending", "true")]).rows.compactMap(\.id) == ["after", "d5", "d4", "d3", "d2", "d1", "short"])
        #expect(try fixture.query("long/v", [("key", #"["\#(prefix)",3]"#)]).rows.compactMap(\.id) == ["d3"])
        #expect(try fixture.query("long/v", [("startkey", #"["\#(prefix)",2]"#), ("endkey", #"["\#(prefix)",4]"#)]).rows.compactMap(\.id) == ["d2", "d3", "d4"])
        // Edits remove the old long rows too.
        let rev = try #require(try fixture.db.document("d3")).revision
        try fixture.db.put(#"{"_id": "d3", "_rev": "\#(rev)", "p": "b", "n": 3}"#)
        #expect(try fixture.query("long/v").rows.compactMap(\.id) == ["short", "d3", "d1", "d2", "d4", "d5", "after"])
    }

    @Test("Ids holding bytes 0x00 and 0x01 come back whole from rows and reduces, and edits replace their rows")
    func idsWithStuffedBytes() throws {
        let fixture = try ViewFixture([design("ids", #"""
            {"v": {"map": "function (doc) { emit(doc.k, doc._id); emit([doc.k, 'again'], null); }"},
             "r": {"map": "function (doc) { emit(doc.k, 1); }",
                   "reduce": "function (keys, values, rereduce) { return rereduce ? values.join(';') : keys.map(function (k) { return JSON.stringify(k[1]); }).join(';'); }"}}
            """#)])
        // JSON text of the ids (escapes as written in the documents).
        let ids = [#"a\u0000b"#, #"c\u0001d"#, #"\u0001\u0001"#, #"\u0000"#, "plain"]
        for (n, id) in ids.enumerated() {
            try fixture.db.put(#"{"_id": "\#(id)", "k": \#(n)}"#)
        }
        let expected = ids.map { try! JSONParser.parse(Array("\"\($0)\"".utf8)).stringValue! }
        let rows = try fixture.query("ids/v").rows
        // Number keys first, then the array keys: each id twice.
        #expect(rows.compactMap(\.id) == expected + expected)
        #expect(rows.map(\.valueJSON).filter { $0 != "null" } == expected.map { JSONValue.string($0).jsonText })
        let reduced = try fixture.query("ids/r", [("group", "true")]).rows.map(\.valueJSON)
        #expect(reduced == expected.map { JSONValue.string(JSONValue.string($0).jsonText).jsonText })
        // An edit finds the old rows through the back index, stuffed ids and all.
        for (n, id) in ids.enumerated() {
            let rev = try #require(try fixture.db.document(expected[n])).revision
            try fixture.db.put(#"{"_id": "\#(id)", "_rev": "\#(rev)", "k": \#(10 + n)}"#)
        }
        let edited = try fixture.query("ids/v")
        #expect(edited.totalRows == 2 * ids.count)
        #expect(edited.rows.map(\.keyJSON).filter { !$0.hasPrefix("[") } == (10..<10 + ids.count).map(String.init))
        try fixture.db.delete(expected[0], revision: try #require(try fixture.db.document(expected[0])).revision)
        #expect(try fixture.query("ids/v").rows.compactMap(\.id) == Array(expected.dropFirst() + expected.dropFirst()))
    }

    @Test("Building a new index removes those no design document uses (an older row layout's, another process's)")
    func leftoverIndexesGo() throws {
        let fixture = try ViewFixture([design("d", #"{"v": {"map": "function (doc) { emit(doc.n, null); }"}}"#)])
        try fixture.db.put(#"{"_id": "a", "n": 1}"#)
        // An index under a signature no design document has, as a Settee with
        // another row layout (or another process's edited view) leaves behind.
        let leftover = String(repeating: "0", count: 64)
        let tables = try fixture.db.indexes.tables(for: leftover)
        try fixture.db.environment.write { transaction in
            try transaction.put(tables.rows, Array("key".utf8), Array("value".utf8))
            try fixture.db.indexes.setState(ViewIndexState(designDocument: "_design/d", view: "v"), for: leftover, in: transaction)
        }
        func signatures() throws -> [String] {
            try fixture.db.environment.read { try fixture.db.indexes.allStates(in: $0).map(\.signature) }
        }
        #expect(try signatures() == [leftover])
        #expect(try fixture.query("d/v").rows.map(\.keyJSON) == ["1"])
        let current = try #require(try fixture.db.designDocument("d")?.view("v")).signature
        #expect(try signatures() == [current])
    }

    @Test("The same key emitted twice by one document gives two rows")
    func duplicateEmits() throws {
        let fixture = try ViewFixture([design("dup", #"{"v": {"map": "function (doc) { emit('k', 1); emit('k', 2); }"}}"#)])
        try fixture.db.put(#"{"_id": "x"}"#)
        #expect(try fixture.query("dup/v").rows.map(\.valueJSON) == ["1", "2"])
    }

    @Test("Keys follow CouchDB's collation in a real index")
    func collationInIndex() throws {
        let keys = [#"null"#, "false", "true", "1", "2", "3.5", #""a""#, #""A""#, #""aa""#, #""b""#, #""B""#, #"["a"]"#, #"["b","c"]"#, #"{"a":1}"#]
        let fixture = try ViewFixture([design("c", #"{"v": {"map": "function (doc) { emit(doc.k, null); }"}}"#)])
        for (n, key) in keys.shuffled().enumerated() { try fixture.db.put(#"{"_id": "d\#(n)", "k": \#(key)}"#) }
        #expect(try fixture.keys("c/v") == keys)
    }

    @Test("require loads views.lib modules in map functions")
    func requireInViews() throws {
        let fixture = try ViewFixture([design("lib", #"{"lib": {"text": "exports.up = function (s) { return s.toUpperCase(); };"}, "v": {"map": "function (doc) { emit(require('views/lib/text').up(doc.name), null); }"}}"#)])
        try fixture.db.put(#"{"_id": "x", "name": "ann"}"#)
        #expect(try fixture.keys("lib/v") == [#""ANN""#])
    }

    @Test("Invalid design documents are refused with file, design doc, view and line; nothing is stored")
    func invalidDesignDocuments() throws {
        let fixture = try ViewFixture()
        func problems(_ text: String) throws -> [DesignDocumentError] {
            try #require(throws: DesignDocumentErrors.self) {
                try fixture.db.loadDesignDocuments(from: fixture.directory.file("bad.json", contents: text))
            }.errors
        }
        let syntax = try problems(design("s", #"{"v": {"map": "function (doc) {\n  emit(doc.a,, 1);\n}"}}"#))[0]
        #expect(syntax.file?.hasSuffix("bad.json") == true)
        #expect(syntax.designDocument == "_design/s")
        #expect(syntax.view == "v")
        #expect(syntax.function == "map")
        #expect(syntax.line == 2)
        #expect(syntax.fileLine == 1)
        #expect(syntax.reason.contains("SyntaxError"))
        #expect(try problems(design("f", #"{"v": {"map": "42"}}"#))[0].reason.hasPrefix("Expression does not eval to a function."))
        #expect(try problems(design("r", #"{"v": {"map": "function (doc) {}", "reduce": "_frob"}}"#))[0].function == "reduce")
        #expect(try problems(#"{"_id": "_design/l", "language": "python", "views": {}}"#)[0].reason.contains("python"))
        #expect(try problems(design("m", #"{"v": {"reduce": "_count"}}"#))[0].reason == "the view has no \"map\" function")
        #expect(try fixture.db.designDocuments().isEmpty)
    }

    @Test("A design document stored with put is checked at its first query, with its id and view")
    func storedDesignDocumentErrors() throws {
        let fixture = try ViewFixture()
        try fixture.db.put(#"{"_id": "_design/raw", "views": {"v": {"map": "function (doc) { emit(doc._id,, 1); }"}}}"#)
        let error = try #require(throws: DesignDocumentError.self) { try fixture.query("raw/v") }
        #expect(error.designDocument == "_design/raw")
        #expect(error.view == "v")
        #expect(error.line == 1)
        #expect(error.reason.contains("SyntaxError"))
    }

    @Test("options.local_seq gives map functions the document's sequence number")
    func localSequence() throws {
        let fixture = try ViewFixture([design("seq", #"{"v": {"map": "function (doc) { emit(doc._id, doc._local_seq); }"}}"#, options: #"{"local_seq": true}"#)])
        try fixture.db.put(#"{"_id": "a"}"#)
        try fixture.db.put(#"{"_id": "b"}"#)
        #expect(try fixture.query("seq/v").rows.map(\.valueJSON) == ["2", "3"])
    }

    @Test("update=false answers from the index as it is; lazy updates after")
    func updateModes() throws {
        let fixture = try ViewFixture([numbersDesign])
        try putNumbers(fixture.db, 1...3)
        #expect(try fixture.query("numbers/by_n").rows.count == 3)
        try fixture.db.put(#"{"_id": "late", "n": 4}"#)
        #expect(try fixture.query("numbers/by_n", [("update", "false")]).rows.count == 3)
        #expect(try fixture.query("numbers/by_n", [("stale", "ok")]).rows.count == 3)
        #expect(try fixture.query("numbers/by_n", [("update", "lazy")]).rows.count == 3)
        #expect(try fixture.query("numbers/by_n", [("update", "false")]).rows.count == 4)
    }

    @Test("A reopened database keeps its indexes")
    func reopen() throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("db")
        do {
            let db = try Database(at: path)
            try db.loadDesignDocuments(from: directory.file("d.json", contents: numbersDesign))
            try putNumbers(db, 1...5)
            #expect(try db.query("numbers/count").rows.first?.valueJSON == "5")
        }
        let db = try Database(at: path)
        #expect(try db.query("numbers/by_n", options: ViewQueryOptions(parameters: [(name: "update", value: "false")])).rows.count == 5)
    }

    @Test("_all_docs lists live documents by id with the same options")
    func allDocs() throws {
        let fixture = try ViewFixture()
        for id in ["c", "a", "b", "d"] { try fixture.db.put(#"{"_id": "\#(id)"}"#) }
        try fixture.db.delete("d", revision: nil)
        let all = try fixture.db.allDocuments()
        #expect(all.rows.compactMap(\.id) == ["a", "b", "c"])
        #expect(all.totalRows == 3)
        let options = { (parameters: [(String, String)]) in try ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) }) }
        #expect(try fixture.db.allDocuments(options: options([("startkey", #""b""#)])).rows.compactMap(\.id) == ["b", "c"])
        #expect(try fixture.db.allDocuments(options: options([("descending", "true"), ("limit", "2")])).rows.compactMap(\.id) == ["c", "b"])
        let keyed = try fixture.db.allDocuments(options: options([("keys", #"["c","zz"]"#), ("include_docs", "true")]))
        #expect(keyed.rows.count == 2)
        #expect(try keyed.rows[0].document?["_id"] == "c")
        #expect(keyed.rows[1].error == "not_found")
    }
}

@Suite("Database from many threads", .ownThread)
struct ConcurrencyTests {
    @Test("Async queries from many tasks while another task writes")
    func concurrentQueries() async throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try await db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id": "_design/c", "views": {"n": {"map": "function (doc) { emit(doc.n, null); }", "reduce": "_count"}}}"#))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for n in 0..<200 { try await db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
            }
            for _ in 0..<4 {
                group.addTask {
                    var last = 0
                    for _ in 0..<20 {
                        let count = Int(try await db.query("c/n").rows.first?.valueJSON ?? "0") ?? 0
                        #expect(count >= last, "a reader never sees the index go back")
                        last = count
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await db.query("c/n").rows.first?.valueJSON == "200")
    }

    @Test("Rows decode into the caller's Decodable types")
    func typedRows() async throws {
        struct Order: Decodable, Equatable { var total: Double }
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try await db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id": "_design/o", "views": {"by": {"map": "function (doc) { emit([doc.c, doc.y], {total: doc.t}); }"}}}"#))
        try await db.put(#"{"_id": "o1", "c": "ann", "y": 2025, "t": 9.5}"#)
        let row = try #require(try await db.query("o/by").rows.first)
        #expect(try row.value(as: Order.self) == Order(total: 9.5))
        #expect(try row.key(as: [JSONKeyPart].self) == [.text("ann"), .number(2025)])
        #expect(throws: CodingError.self) { try row.value(as: [Int].self) }
    }
}

/// An element of a mixed array key, for decoding tests.
private enum JSONKeyPart: Decodable, Equatable {
    case text(String), number(Double)
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) { self = .text(text) } else { self = .number(try container.decode(Double.self)) }
    }
}
