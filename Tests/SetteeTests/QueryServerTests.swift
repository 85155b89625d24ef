import Foundation
import SetteeQueryServer
import Testing
import SetteeJavaScript
@testable import Settee

/// Feeds scripted lines to a query server and records what it answers to each.
private final class ScriptedTransport: QueryServerTransport {
    private var pending: [String]
    private var current = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 1)
    private(set) var exchanges: [Exchange] = []

    struct Exchange: Equatable, CustomStringConvertible {
        var input: String
        var output: [String]

        var description: String { (["> " + input] + output).joined(separator: "\n") }
    }

    /// Lines whose reading takes a while, by index: CouchDB producing the next row slowly.
    private let pauses: [Int: Duration]

    init(_ lines: [String], pauses: [Int: Duration] = [:]) {
        pending = lines.reversed()
        self.pauses = pauses
    }

    deinit {
        current.deallocate()
    }

    func readLine() -> UnsafeRawBufferPointer? {
        guard let line = pending.popLast() else { return nil }
        if let pause = pauses[exchanges.count] {
            Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18)
        }
        exchanges.append(Exchange(input: line, output: []))
        current.deallocate()
        current = UnsafeMutableRawBufferPointer.allocate(byteCount: line.utf8.count, alignment: 1)
        _ = current.initializeMemory(as: UInt8.self, from: line.utf8)
        return UnsafeRawBufferPointer(current)
    }

    func writeLine(_ line: UnsafeRawBufferPointer) {
        exchanges[exchanges.count - 1].output.append(String(decoding: line, as: UTF8.self))
    }
}

/// Runs a conversation written as a transcript: lines starting with `> ` are
/// sent to the server, the lines after each are what it must answer, and the
/// server must then exit with `status`.
/// `pauses` delays the reading of input lines, by index.
private func expectConversation(
    _ transcript: String, status: Int32 = 0, pauses: [Int: Duration] = [:], heapLimitBytes: Int = 64 << 20,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    var expected: [ScriptedTransport.Exchange] = []
    for line in transcript.split(separator: "\n", omittingEmptySubsequences: true) {
        if line.hasPrefix("> ") {
            expected.append(.init(input: String(line.dropFirst(2)), output: []))
        } else {
            expected[expected.count - 1].output.append(String(line))
        }
    }
    var configuration = JavaScriptConfiguration()
    configuration.heapLimitBytes = heapLimitBytes
    let worker = try JavaScriptWorker(configuration: configuration)
    let (exchanges, exitStatus) = try worker.run { context in
        let transport = ScriptedTransport(expected.map(\.input), pauses: pauses)
        let exitStatus = try QueryServer(context: context, transport: transport).run()
        return (transport.exchanges, exitStatus)
    }
    #expect(exitStatus == status, sourceLocation: sourceLocation)
    #expect(exchanges.count == expected.count, "the server read \(exchanges.count) of \(expected.count) lines", sourceLocation: sourceLocation)
    for (got, want) in zip(exchanges, expected) {
        #expect(got == want, sourceLocation: sourceLocation)
    }
}

@Suite("Query server: reset, add_fun, add_lib, map_doc", .ownThread)
struct QueryServerMapTests {
    @Test("map_doc answers one list of [key, value] rows per function, in order")
    func mapDocument() throws {
        try expectConversation(#"""
            > ["reset"]
            true
            > ["add_fun", "function(doc){ emit(\"foo\", doc.a); emit(\"bar\", doc.a); }"]
            true
            > ["add_fun", "function(doc){ if (doc.b) emit([doc.b, 1], {n: doc.a}); }\n// trailing comment"]
            true
            > ["add_fun", "function(doc){}"]
            true
            > ["map_doc", {"_id": "x", "a": "b"}]
            [[["foo","b"],["bar","b"]],[],[]]
            > ["map_doc", {"a": 1, "b": "é"}]
            [[["foo",1],["bar",1]],[[["é",1],{"n":1}]],[]]
            """#)
    }

    @Test("reset forgets the functions; with no functions map_doc answers []")
    func resetForgetsFunctions() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ emit(1, 2); }"]
            true
            > ["reset", {"reduce_limit": true, "timeout": 5000}]
            true
            > ["map_doc", {"_id": "x"}]
            []
            """#)
    }

    @Test("Documents are frozen, emit(undefined) is null, log() writes log lines first")
    func frozenDocumentsAndLogs() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ doc.a = 2; log(doc.a); log({b: [1]}); emit(undefined, doc.missing); }"]
            true
            > ["map_doc", {"_id": "x", "a": 1}]
            ["log","1"]
            ["log","{\"b\":[1]}"]
            [[[null,null]]]
            """#)
    }

    @Test("A map function that throws is logged with the document id and emits nothing; the others still run")
    func mapExceptionIsLogged() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ emit(1, null); throw new TypeError('no ' + doc._id); }"]
            true
            > ["add_fun", "function(doc){ emit(2, null); }"]
            true
            > ["add_fun", "function(doc){ throw {reason: 'plain object'}; }"]
            true
            > ["map_doc", {"_id": "doc-1"}]
            ["log","function raised exception (new TypeError(\"no doc-1\", \"map function\", 1)) with doc._id doc-1"]
            ["log","function raised exception ({reason:\"plain object\"}) with doc._id doc-1"]
            [[],[[2,null]],[]]
            """#)
    }

    @Test("How a map function's throw is answered: 'fatal_error' fails the command, [\"fatal\", …] and runaway recursion exit", arguments: [
        ("throw 'fatal_error';", #"["error","map_runtime_error","function raised 'fatal_error'"]"#, Int32(0)),
        ("throw ['fatal', 'my_error', 'bad ' + doc._id];", #"["error","my_error","bad x"]"#, 255),
        ("function f(n) { return f(n + 1) + 1; } emit(f(0), 1);", #"["error","InternalError","too much recursion"]"#, 255),
    ])
    func mapFailures(body: String, answer: String, status: Int32) throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ \#(body) }"]
            true
            > ["map_doc", {"_id": "x"}]
            \#(answer)
            """#, status: status)
    }

    @Test("A function running past reset's timeout is stopped with a timeout error; the server carries on")
    func timeout() throws {
        try expectConversation(#"""
            > ["reset", {"timeout": 50}]
            true
            > ["add_fun", "function(doc){ while (true) {} }"]
            true
            > ["map_doc", {"_id": "x"}]
            ["error","timeout","function timed out after 50 ms"]
            > ["reset"]
            true
            """#)
    }

    @Test("Running out of memory ends the server with status 1, unanswered, as couchjs exits")
    func outOfMemory() throws {
        // A long timeout: on a busy machine, collections near the heap limit make the loop slow to reach it.
        try expectConversation(#"""
            > ["reset", {"timeout": 600000}]
            true
            > ["add_fun", "function(doc){ var a = []; while (true) a.push({x: [1, 2, 3], y: 'y' + a.length}); }"]
            true
            > ["map_doc", {"_id": "x"}]
            """#, status: 1, heapLimitBytes: 16 << 20)
    }

    @Test("Functions past the heap limit end the server with status 1, as running out of memory does, and do not crash it")
    func tooManyFunctions() throws {
        var configuration = JavaScriptConfiguration()
        configuration.heapLimitBytes = 16 << 20
        let worker = try JavaScriptWorker(configuration: configuration)
        let lines = (0..<6000).map { #"["add_fun", "function(doc){ emit(\#($0), 1); }"]"# }
        let status = try worker.run { context in
            try QueryServer(context: context, transport: ScriptedTransport(lines)).run()
        }
        #expect(status == 1)
    }

    @Test("add_fun reports compilation errors with the source")
    func compilationErrors() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc) { emit(1 }"]
            ["error","compilation_error","SyntaxError: missing ) after argument list (function(doc) { emit(1 })"]
            > ["add_fun", "42"]
            ["error","compilation_error","Expression does not eval to a function. (42)"]
            > ["add_fun", 42]
            ["error","compilation_error","Expression does not eval to a function. (42)"]
            > ["map_doc", {"_id": "x"}]
            []
            """#)
    }

    @Test("add_lib gives map functions require('views/lib/…'); reset removes it")
    func library() throws {
        try expectConversation(#"""
            > ["add_lib", {"util": "exports.twice = function (x) { return x * 2; };"}]
            true
            > ["add_fun", "function(doc){ emit(require('views/lib/util').twice(doc.n), null); }"]
            true
            > ["map_doc", {"_id": "x", "n": 21}]
            [[[42,null]]]
            > ["reset"]
            true
            > ["add_fun", "function(doc){ emit(require('views/lib/util').twice(doc.n), null); }"]
            true
            > ["map_doc", {"_id": "x", "n": 21}]
            ["log","function raised exception [\"error\", \"invalid_require_path\", \"Object has no property \\\"util\\\". null\"] with doc._id x"]
            [[]]
            """#)
    }
}

@Suite("Query server: search indexes (index_doc, nouveau_index_doc)", .ownThread)
struct QueryServerIndexTests {
    @Test("index_doc answers each function's index(name, value, options) fields; bad fields are logged")
    func dreyfus() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ index('title', doc.t, {store: true}); index('n', 1); }"]
            true
            > ["index_doc", {"_id": "x", "t": "Dune"}]
            [[["title","Dune",{"store":true}],["n",1,{}]]]
            > ["index_doc", {"_id": "y"}]
            ["log","function raised exception ({name:\"TypeError\", message:\"value must be a string, a number or boolean not undefined\"}) with doc._id y"]
            [[]]
            > ["index_doc", {"_id": "z", "t": {}}]
            ["log","function raised exception ({name:\"TypeError\", message:\"value must be a string, a number or boolean not object\"}) with doc._id z"]
            [[]]
            """#)
    }

    @Test("nouveau_index_doc answers typed fields; map_doc afterwards still emits rows")
    func nouveau() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ index('text', 'title', doc.t, {store: true}); index('double', 'n', 1, {facet: true}); index('stored', 's', 'v'); }", "nouveau"]
            true
            > ["nouveau_index_doc", {"_id": "x", "t": "Dune"}]
            [[{"@type":"text","name":"title","value":"Dune","store":true},{"@type":"double","name":"n","value":1,"facet":true},{"@type":"stored","name":"s","value":"v"}]]
            > ["add_fun", "function(doc){ index('keyword', '_id', doc._id); }", "nouveau"]
            true
            > ["nouveau_index_doc", {"_id": "x", "t": "Dune"}]
            ["log","function raised exception ({name:\"ReservedName\", message:\"name must not start with an underscore\"}) with doc._id x"]
            [[{"@type":"text","name":"title","value":"Dune","store":true},{"@type":"double","name":"n","value":1,"facet":true},{"@type":"stored","name":"s","value":"v"}],[]]
            > ["reset"]
            true
            > ["add_fun", "function(doc){ emit(doc._id, 1); }"]
            true
            > ["map_doc", {"_id": "x"}]
            [[["x",1]]]
            """#)
    }
}

@Suite("Query server: reduce and rereduce", .ownThread)
struct QueryServerReduceTests {
    @Test("reduce passes keys and values; rereduce passes null keys and rereduce = true")
    func reduceAndRereduce() throws {
        try expectConversation(#"""
            > ["reduce", ["function(k, v, r) { return [k, v, r]; }", "function(k, v) { return sum(v); }"], [[[1, "a"], 10], [[2, "b"], 20]]]
            [true,[[[[1,"a"],[2,"b"]],[10,20],false],30]]
            > ["rereduce", ["function(k, v, r) { return [k, sum(v), r]; }"], [1, 2, 3], "db/_design/x/_view/y"]
            [true,[[null,6,true]]]
            > ["reduce", ["function(k, v) { return v.length; }"], []]
            [true,[0]]
            """#)
    }

    @Test("A reduce function that throws is logged and reduces to null")
    func reduceException() throws {
        try expectConversation(#"""
            > ["reduce", ["function(k, v) { return v.x.y; }", "function(k, v) { return 1; }"], [[[1, "a"], 10]]]
            ["log","function raised exception (new TypeError(\"v.x is undefined\", \"reduce function\", 1))"]
            [true,[null,1]]
            > ["rereduce", ["function(k, v) { throw ['fatal', 'reduce_failed', 'no']; }"], [1]]
            ["error","reduce_failed","no"]
            """#, status: 255)
    }

    @Test("A reduce function that does not compile fails the command")
    func reduceCompilationError() throws {
        try expectConversation(#"""
            > ["reduce", ["function(k, v) { return"], [[[1, "a"], 10]]]
            ["error","compilation_error","SyntaxError: expected expression, got ')' (function(k, v) { return)"]
            > ["rereduce", ["function(k, v) { return sum(v); }"], [1, 2]]
            [true,[3]]
            """#)
    }

    @Test("reduce_limit: output that does not shrink is an error, or only logged with \"log\"")
    func reduceLimit() throws {
        let grow = "function(k, v) { var s = ''; for (var i = 0; i < 30; i++) s += 'xxxxxxxxxx'; return s; }"
        try expectConversation(#"""
            > ["reset", {"reduce_limit": true, "reduce_limit_threshold": 100, "reduce_limit_ratio": 2}]
            true
            > ["reduce", ["\#(grow)"], [[[1, "a"], 1]], "ctx"]
            ["error","reduce_overflow_error","Reduce output must shrink more rapidly: input size: 40 output size: 304 context: ctx"]
            > ["rereduce", ["function(k, v) { return sum(v); }"], [1, 2]]
            [true,[3]]
            > ["reset", {"reduce_limit": "log", "reduce_limit_threshold": 100, "reduce_limit_ratio": 2}]
            true
            > ["reduce", ["\#(grow)"], [[[1, "a"], 1]]]
            ["log","reduce_overflow_error: Reduce output must shrink more rapidly: input size: 33 output size: 304 context: "]
            [true,["\#(String(repeating: "xxxxxxxxxx", count: 30))"]]
            > ["reset", {"reduce_limit": false, "reduce_limit_threshold": 100, "reduce_limit_ratio": 2}]
            true
            > ["reduce", ["\#(grow)"], [[[1, "a"], 1]]]
            [true,["\#(String(repeating: "xxxxxxxxxx", count: 30))"]]
            """#)
    }

    @Test("Each reduce command runs its functions afresh, as couchjs compiles them per command: globals do not carry over")
    func reduceStartsAfresh() throws {
        try expectConversation(#"""
            > ["reduce", ["function(k, v) { this.calls = (this.calls || 0) + 1; return calls; }"], [[[1, "a"], 1]]]
            [true,[1]]
            > ["reduce", ["function(k, v) { this.calls = (this.calls || 0) + 1; return calls; }"], [[[1, "a"], 1]]]
            [true,[1]]
            """#)
    }

    @Test("reset gives a fresh sandbox: globals and built-ins changed before it are gone (one tenant cannot see another's data)")
    func resetIsolates() throws {
        try expectConversation(#"""
            > ["reset"]
            true
            > ["add_fun", "function(doc){ leaked = doc.secret; String.prototype.toUpperCase = function(){ return \"PWNED\"; }; }"]
            true
            > ["map_doc", {"_id": "A", "secret": "S3CRET"}]
            [[]]
            > ["reset"]
            true
            > ["add_fun", "function(doc){ emit(doc.type.toUpperCase(), typeof leaked === 'undefined' ? null : leaked); }"]
            true
            > ["map_doc", {"_id": "B", "type": "order"}]
            [[["ORDER",null]]]
            """#)
    }

    @Test("Within one reset each function keeps its globals and built-ins to itself, as couchjs's sandboxes do")
    func functionsAreIsolated() throws {
        try expectConversation(#"""
            > ["reset"]
            true
            > ["add_fun", "function(doc){ hacked = 'hacked'; JSON.stringify = function () { return 'PWNED'; }; }"]
            true
            > ["add_fun", "function(doc){ emit(typeof hacked, JSON.stringify([1])); }"]
            true
            > ["map_doc", {"_id": "A"}]
            [[],[["undefined","[1]"]]]
            """#)
    }
}

@Suite("Query server: design documents", .ownThread)
struct QueryServerDesignDocumentTests {
    private static let ddoc = #"""
        {"_id": "_design/app", "lib": {"fmt": "exports.title = function (d) { return d.title.toUpperCase(); };"},
         "shows": {
           "simple": "function(doc, req) { log('ok'); return [doc.title, doc.body].join(' - '); }",
           "headers": "function(doc, req) { return {code: 200, headers: {'X-Plankton': 'Rusty'}, body: doc.title}; }",
           "sends": "function(doc, req) { start({headers: {'Content-Type': 'text/plain'}}); send('a'); send('b'); return 'tail'; }",
           "lib": "function(doc, req) { return require('lib/fmt').title(doc); }",
           "typed": "function(doc, req) { provides('html', function () { return '<p>' + doc.title + '</p>'; }); provides('json', function () { return toJSON(doc); }); }",
           "broken": "function(doc, req) { return doc.missing.field; }",
           "error": "function() { throw ['error', 'error_key', 'testing']; }",
           "fatal": "function() { throw ['fatal', 'error_key', 'testing']; }",
           "nothing": "function() { return 7; }",
           "syntax": "function( {"
         },
         "lists": {
           "rows": "function(head, req) { send('first'); var row; while (row = getRow()) { send(row.key); } return 'tail'; }",
           "capped": "function(head, req) { start({code: 201}); var row, n = 0; while (row = getRow()) { send(row.key); if (++n == 2) return 'early'; } }",
           "norows": "function(head, req) { return 'done ' + head.total_rows; }"
         },
         "filters": {"good": "function(doc, req) { return doc.good && req.query.on; }"},
         "views": {"even": {"map": "function(doc) { if (doc.n % 2 == 0) emit(doc.n, null); }"}},
         "validate_doc_update": "function(newDoc, oldDoc, userCtx) { if (newDoc.bad) throw {forbidden: 'bad doc'}; if (!userCtx.name) throw {unauthorized: 'log in'}; if (newDoc.broken) newDoc.x.y = 1; }",
         "updates": {"hello": "function(doc, req) { doc.world = 'hello'; return [doc, 'hello doc']; }",
                     "none": "function(doc, req) { return [null, {code: 404, body: 'no'}]; }",
                     "undefined": "function(doc, req) { return [doc]; }"},
         "rewrites": "function(req) { if (req.path[0] == 'none') return; if (req.path[0] == 'obj') return {path: 'x', query: {a: 1}}; return 'new/location'; }"
        }
        """#.replacingOccurrences(of: "\n", with: "")

    private static func conversation(_ body: String, status: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectConversation(#"""
            > ["ddoc", "new", "_design/app", \#(ddoc)]
            true
            """# + "\n" + body, status: status, sourceLocation: sourceLocation)
    }

    @Test("Shows: a string, a response object, start()/send(), require from the design document, reset keeps design documents")
    func shows() throws {
        try Self.conversation(#"""
            > ["reset"]
            true
            > ["ddoc", "_design/app", ["shows", "simple"], [{"title": "Best ever", "body": "Doc body"}, {}]]
            ["log","ok"]
            ["resp",{"body":"Best ever - Doc body"}]
            > ["ddoc", "_design/app", ["shows", "headers"], [{"title": "T"}, {}]]
            ["resp",{"code":200,"headers":{"X-Plankton":"Rusty"},"body":"T"}]
            > ["ddoc", "_design/app", ["shows", "sends"], [{}, {}]]
            ["resp",{"body":"abtail","headers":{"headers":{"Content-Type":"text/plain"}}}]
            > ["ddoc", "_design/app", ["shows", "lib"], [{"title": "dune"}, {}]]
            ["resp",{"body":"DUNE"}]
            """#)
    }

    @Test("provides() picks the response by format or Accept header; CouchDB lists the alternatives last-first")
    func provides() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["shows", "typed"], [{"title": "T"}, {"headers": {"Accept": "text/html"}}]]
            ["resp",{"body":"<p>T</p>","headers":{"Content-Type":"text/html; charset=utf-8"}}]
            > ["ddoc", "_design/app", ["shows", "typed"], [{"title": "T"}, {"headers": {}, "query": {"format": "json"}}]]
            ["resp",{"body":"{\"title\":\"T\"}","headers":{"Content-Type":"application/json"}}]
            > ["ddoc", "_design/app", ["shows", "typed"], [{"title": "T"}, {"headers": {"Accept": "image/png"}}]]
            ["error","not_acceptable","Content-Type image/png not supported, try one of: application/json, text/x-json, text/html; charset=utf-8"]
            """#)
    }

    @Test("Show errors: render_error, thrown protocol errors, not_found, compilation_error")
    func showErrors() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["shows", "error"], [{}, {}]]
            ["error","error_key","testing"]
            > ["ddoc", "_design/app", ["shows", "nothing"], [{}, {}]]
            ["error","render_error","undefined response from show function"]
            > ["ddoc", "_design/app", ["shows", "broken"], [null, {"path": ["db", "_design", "app", "_show", "broken", "docid"]}]]
            ["error","not_found","document not found"]
            > ["ddoc", "_design/app", ["shows", "missing"], [{}, {}]]
            ["error","not_found","missing shows function missing on design doc _design/app"]
            > ["ddoc", "_design/app", ["shows", "syntax"], [{}, {}]]
            ["error","compilation_error","SyntaxError: expected property name, got ')' (function( {)"]
            > ["reset"]
            true
            """#)
    }

    @Test("A show function's runtime error is logged with its stack and answered as render_error")
    func showRuntimeError() throws {
        var configuration = JavaScriptConfiguration()
        configuration.heapLimitBytes = 64 << 20
        let worker = try JavaScriptWorker(configuration: configuration)
        let output = try worker.run { context in
            let transport = ScriptedTransport([
                #"["ddoc", "new", "_design/app", \#(Self.ddoc)]"#,
                #"["ddoc", "_design/app", ["shows", "broken"], [{}, {}]]"#,
            ])
            _ = try QueryServer(context: context, transport: transport).run()
            return transport.exchanges[1].output
        }
        try #require(output.count == 2)
        #expect(output[0].hasPrefix(#"["log","function raised error: TypeError: doc.missing is undefined \nstacktrace: "#))
        #expect(output[1].hasPrefix(#"["error","render_error","function raised error: TypeError: doc.missing is undefined \nstacktrace: "#))
    }

    /// A list that returns after two rows: its tail goes with the second row's chunks.
    private static let cappedList = #"""
        > ["ddoc", "_design/app", ["lists", "capped"], [{}, {}]]
        ["start",[],{"code":201,"headers":{}}]
        > ["list_row", {"key": "a"}]
        ["chunks",["a"]]
        > ["list_row", {"key": "b"}]
        ["end",["b","early"]]
        """#

    @Test("Lists: the head with the first chunks, a chunks answer per row, the tail at list_end")
    func lists() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["lists", "rows"], [{"total_rows": 2}, {"q": "ok"}]]
            ["start",["first"],{"headers":{}}]
            > ["list_row", {"key": "baz"}]
            ["chunks",["baz"]]
            > ["list_row", {"key": "bam"}]
            ["chunks",["bam"]]
            > ["list_end"]
            ["end",["tail"]]
            > ["ddoc", "_design/app", ["lists", "norows"], [{"total_rows": 2}, {}]]
            ["start",[],{"headers":{}}]
            > ["list_end"]
            ["end",["done 2"]]
            \#(Self.cappedList)
            > ["reset"]
            true
            """#)
    }

    @Test("Waiting for the next row does not count against the time limit; running does")
    func listTimeLimit() throws {
        try expectConversation(#"""
            > ["reset", {"timeout": 100}]
            true
            > ["ddoc", "new", "d", {"lists": {"slow": "function() { var row; while (row = getRow()) { if (row.key == 'spin') while (true) {} send(row.key); } }"}}]
            true
            > ["ddoc", "d", ["lists", "slow"], [{}, {}]]
            ["start",[],{"headers":{}}]
            > ["list_row", {"key": "late"}]
            ["chunks",["late"]]
            > ["list_row", {"key": "spin"}]
            ["error","timeout","function timed out after 100 ms"]
            > ["reset"]
            true
            """#, pauses: [3: .milliseconds(300)])
    }

    @Test("A row after the list ended is an unknown command: fatal")
    func rowAfterListEnded() throws {
        try Self.conversation(#"""
            \#(Self.cappedList)
            > ["list_row", {"key": "c"}]
            ["error","unknown_command","unknown command 'list_row'"]
            """#, status: 255)
    }

    @Test("Anything but a row inside a list is a fatal list_error")
    func nonRowInsideList() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["lists", "rows"], [{}, {"q": "ok"}]]
            ["start",["first"],{"headers":{}}]
            > ["reset"]
            ["error","list_error","not a row 'reset'"]
            """#, status: 255)
    }

    @Test("The input ending inside a list is fatal")
    func inputEndsInsideList() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["lists", "rows"], [{}, {}]]
            ["start",["first"],{"headers":{}}]
            ["error","list_error","the input ended inside a list"]
            """#, status: 255)
    }

    @Test("Filters, and views used as filters")
    func filters() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["filters", "good"], [[{"good": true}, {"good": false}, {}], {"query": {"on": 1}}]]
            [true,[true,false,false]]
            > ["ddoc", "_design/app", ["views", "even", "map"], [[{"n": 2}, {"n": 3}, {"n": 4}]]]
            [true,[true,false,true]]
            > ["add_fun", "function(doc){ emit(doc.n, null); }"]
            true
            > ["map_doc", {"n": 5}]
            [[[5,null]]]
            > ["ddoc", "_design/app", ["filters", "good"], [[{"good": true}], {}]]
            ["error","TypeError","req.query is undefined"]
            """#)
    }

    @Test("validate_doc_update: 1, or the thrown forbidden/unauthorized object; real errors are errors")
    func validate() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["validate_doc_update"], [{"good": true}, null, {"name": "ann"}, {}]]
            1
            > ["ddoc", "_design/app", ["validate_doc_update"], [{"bad": true}, null, {"name": "ann"}, {}]]
            {"forbidden":"bad doc"}
            > ["ddoc", "_design/app", ["validate_doc_update"], [{}, null, {"name": null}, {}]]
            {"unauthorized":"log in"}
            > ["ddoc", "_design/app", ["validate_doc_update"], [{"broken": true}, null, {"name": "ann"}, {}]]
            ["error","TypeError","newDoc.x is undefined"]
            """#)
    }

    @Test("Updates: [\"up\", doc, response]; GET is refused")
    func updates() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["updates", "hello"], [{"foo": "gnarly"}, {"method": "POST"}]]
            ["up",{"foo":"gnarly","world":"hello"},{"body":"hello doc"}]
            > ["ddoc", "_design/app", ["updates", "none"], [null, {"method": "PUT"}]]
            ["up",null,{"code":404,"body":"no"}]
            > ["ddoc", "_design/app", ["updates", "hello"], [{}, {"method": "GET"}]]
            ["error","method_not_allowed","Update functions do not allow GET"]
            > ["ddoc", "_design/app", ["updates", "undefined"], [{}, {"method": "POST"}]]
            ["error","render_error","undefined response from update function"]
            """#)
    }

    @Test("Rewrites: a path string, an object, or no rule")
    func rewrites() throws {
        try Self.conversation(#"""
            > ["ddoc", "_design/app", ["rewrites"], [{"path": ["foo", "bar"], "method": "POST"}]]
            ["ok",{"path":"new/location","method":"POST"}]
            > ["ddoc", "_design/app", ["rewrites"], [{"path": ["obj"], "method": "GET"}]]
            ["ok",{"path":"x","query":{"a":1}}]
            > ["ddoc", "_design/app", ["rewrites"], [{"path": ["none"], "method": "GET"}]]
            ["no_dispatch_rule"]
            """#)
    }

    @Test("Fatal design-document errors are answered, then the server exits with 255", arguments: [
        (#"["ddoc", "_design/other", ["shows", "x"], [{}, {}]]"#,
         #"["error","query_protocol_error","uncached design doc: _design/other"]"#),
        (#"["ddoc", "_design/app", ["spells", "x"], [{}, {}]]"#,
         #"["error","unknown_command","unknown ddoc command 'spells'"]"#),
        (#"["ddoc", "_design/app", ["shows", "fatal"], [{}, {}]]"#,
         #"["error","error_key","testing"]"#),
    ])
    func fatalErrors(command: String, answer: String) throws {
        try Self.conversation("> \(command)\n\(answer)", status: 255)
    }
}

@Suite("Query server: the protocol itself", .ownThread)
struct QueryServerProtocolTests {
    @Test("An unknown command is fatal")
    func unknownCommand() throws {
        try expectConversation(#"""
            > ["reset"]
            true
            > ["frobnicate", 1]
            ["error","unknown_command","unknown command 'frobnicate'"]
            """#, status: 255)
    }

    @Test("A line that is not a JSON array is fatal")
    func invalidLine() throws {
        try expectConversation(#"""
            > ["reset"
            ["error","query_protocol_error","invalid command: unexpected end of input at line 1, column 9"]
            """#, status: 255)
    }

    @Test("A malformed argument fails only its command")
    func malformedArguments() throws {
        try expectConversation(#"""
            > ["reduce", "not a list", []]
            ["error","query_protocol_error","reduce needs functions and values"]
            > ["reduce", ["function(k, v) { return 1; }"], [1]]
            ["error","query_protocol_error","invalid reduce command: unexpected character '1' at line 1, column 2"]
            > ["map_doc"]
            ["error","query_protocol_error","map_doc needs a document"]
            > ["reset"]
            true
            """#)
    }

    @Test("An empty line ends the server, as couchjs's loop does")
    func emptyLineEnds() throws {
        try expectConversation(#"""
            > ["reset"]
            true
            > 
            """#)
    }

    @Test("The server over file descriptors: answers in order, long lines, 0 at the end of input")
    func fileDescriptors() throws {
        var toServer: [Int32] = [0, 0]
        var fromServer: [Int32] = [0, 0]
        #expect(pipe(&toServer) == 0 && pipe(&fromServer) == 0)
        // Many short lines, then one longer than the transport's first buffer, and no final newline.
        let input = #"["reset"]"# + "\n" + #"["add_fun", "function(doc) { emit(doc._id, 1); }"]"# + "\n"
            + String(repeating: #"["map_doc", {"_id": "d"}]"# + "\n", count: 3000)
            + #"["map_doc", {"_id": "big", "pad": "\#(String(repeating: "x", count: 200_000))"}]"#
        let serverInput = toServer[1]
        let writer = Thread {
            input.utf8CString.withUnsafeBufferPointer { bytes in
                var offset = 0
                let count = bytes.count - 1
                while offset < count {
                    let written = write(serverInput, bytes.baseAddress! + offset, count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(serverInput)
        }
        writer.start()
        let worker = try JavaScriptWorker()
        let (readEnd, writeEnd) = (toServer[0], fromServer[1])
        let status = try worker.run { context in
            let transport = FileDescriptorTransport(input: readEnd, output: writeEnd)
            return try QueryServer(context: context, transport: transport).run()
        }
        close(fromServer[1])
        close(toServer[0])
        let output = FileHandle(fileDescriptor: fromServer[0], closeOnDealloc: true).readDataToEndOfFile()
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        #expect(status == 0)
        #expect(lines.count == 3003)
        #expect(lines.prefix(2) == ["true", "true"])
        #expect(lines.dropFirst(2).dropLast().allSatisfy { $0 == #"[[["d",1]]]"# })
        #expect(lines.last == #"[[["big",1]]]"#)
    }
}

/// CouchDB 3.5 behaviours of couchjs that `settee couchjs` matches
/// (share/server/*.js of CouchDB 3.5.0, as built into its main.js).
@Suite("Query server: CouchDB 3.5's couchjs", .ownThread)
struct QueryServerCouchJSFidelityTests {
    /// share/server/60/rewrite_fun.js: the last function declaration, when it
    /// has no name, becomes the function; helpers and variables may come first.
    @Test("Functions with helpers or variables declared before them compile, in add_fun, reduce and shows")
    func helpersBeforeTheFunction() throws {
        try expectConversation(#"""
            > ["add_fun", "function helper(x){return x*2;}\nfunction(doc){emit(doc._id, helper(doc.n));}"]
            true
            > ["add_fun", "var k=10; function(doc){ emit(k, null); }"]
            true
            > ["map_doc", {"_id": "a", "n": 4}]
            [[["a",8]],[[10,null]]]
            > ["reduce", ["function twice(v){return v*2;}\nfunction(keys, values){return twice(sum(values));}"], [[["a","a"],1],[["b","b"],2]]]
            [true,[6]]
            > ["ddoc", "new", "_design/h", {"_id": "_design/h", "shows": {"s": "var greeting = 'hi ';\nfunction(doc, req) { return greeting + doc.name; }"}}]
            true
            > ["ddoc", "_design/h", ["shows", "s"], [{"name": "ann"}, {}]]
            ["resp",{"body":"hi ann"}]
            """#)
    }
}

extension QueryServerCouchJSFidelityTests {
    /// share/server/views.js: `emit` applies util.js's `error_to_json` to the
    /// value; rows and reductions are written by JSON.stringify.
    @Test("map_doc and reduce write values as couchjs's JSON.stringify does")
    func serialisation() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ var k = {toJSON: function (key) { return 'key=' + key; }}; emit(k, new Error('boom')); emit(1, k); emit(2, {toJSON: function () { return {toJSON: function () { return 'inner'; }, v: 1}; }}); }"]
            true
            > ["map_doc", {"_id": "a"}]
            [[["key=0",{"error":"Error","message":"boom"}],[1,"key=1"],[2,{"v":1}]]]
            > ["reduce", ["function(){ return 1; }", "function(){ return {toJSON: function (key) { return 'r' + key; }}; }"], [[["a","a"],1]]]
            [true,[1,"r1"]]
            """#)
    }
}

extension QueryServerCouchJSFidelityTests {
    /// share/server/loop.js, state.js, views.js and dreyfus.js: a map
    /// function's sandbox has `index` (Dreyfus.index), which collects into
    /// index_doc's results, not map_doc's; emit() collects into map_doc's.
    @Test("index() adds no row to map_doc, emit() no field to index_doc")
    func searchGlobalsInViews() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ index('f', 'v'); emit(doc._id, 1); }"]
            true
            > ["map_doc", {"_id": "x"}]
            [[["x",1]]]
            > ["index_doc", {"_id": "x"}]
            [[["f","v",{}]]]
            > ["map_doc", {"_id": "y"}]
            [[["y",1]]]
            """#)
    }
}

extension QueryServerCouchJSFidelityTests {
    /// CouchDB 3.5 resets with `{"reduce_limit": true, "timeout": 5000}`
    /// (couch_proc_manager.erl `get_proc_config/0`); its views.js `runReduce`
    /// then fails output over 4,096 characters that is more than half the
    /// input, naming no context.
    @Test("reduce_limit as CouchDB 3.5 configures it: 4,096 characters, ratio 2")
    func reduceLimit35() throws {
        let grow = "function(k, v) { var s = ''; for (var i = 0; i < 420; i++) s += 'xxxxxxxxxx'; return s; }"
        try expectConversation(#"""
            > ["reset", {"reduce_limit": true, "timeout": 5000}]
            true
            > ["reduce", ["\#(grow)"], [[[1, "a"], 1]]]
            ["error","reduce_overflow_error","Reduce output must shrink more rapidly: input size: 33 output size: 4204"]
            > ["rereduce", ["\#(grow)"], [1, 2]]
            ["error","reduce_overflow_error","Reduce output must shrink more rapidly: input size: 26 output size: 4204"]
            > ["reset", {"reduce_limit": false, "timeout": 5000}]
            true
            > ["rereduce", ["function(k, v) { return sum(v); }"], [1, 2]]
            [true,[3]]
            """#)
    }
}

extension QueryServerCouchJSFidelityTests {
    /// share/server/views.js `handleViewError`: "function raised exception " +
    /// util.js `errstr(err)`, which is SpiderMonkey's `err.toSource()`.
    @Test("A map function's exception is logged with the thrown value as couchjs's toSource shows it")
    func mapExceptionLog() throws {
        try expectConversation(#"""
            > ["add_fun", "function(doc){ if (doc.t === 's') throw 'boom'; if (doc.t === 'n') throw 5; if (doc.t === 'o') throw {a: 1, b: 'x'}; emit(doc._id, 1); }"]
            true
            > ["map_doc", {"_id": "doc2", "t": "s"}]
            ["log","function raised exception (new String(\"boom\")) with doc._id doc2"]
            [[]]
            > ["map_doc", {"_id": "doc3", "t": "n"}]
            ["log","function raised exception (new Number(5)) with doc._id doc3"]
            [[]]
            > ["map_doc", {"_id": "doc4", "t": "o"}]
            ["log","function raised exception ({a:1, b:\"x\"}) with doc._id doc4"]
            [[]]
            """#)
    }
}
