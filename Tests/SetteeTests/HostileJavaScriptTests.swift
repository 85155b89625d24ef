import Foundation
import Synchronization
import Testing
import SetteeJavaScript
@testable import Settee

/// A worker with a small memory bound and a generous timeout, so that a memory
/// bomb is stopped by the bound, not by the clock.
private let boundedWorker: JavaScriptWorker = {
    var configuration = JavaScriptConfiguration()
    configuration.timeout = .seconds(30)
    configuration.heapLimitBytes = 64 << 20
    configuration.memoryLimitBytes = 96 << 20
    configuration.emitLimitBytes = 0  // the memory bound is what these tests are about
    return try! JavaScriptWorker(configuration: configuration)
}()

private func map(_ document: String, _ sources: [String], on worker: JavaScriptWorker = boundedWorker) throws -> DocumentMapResult {
    try worker.run { context in
        let functions = try sources.map { try context.compile($0) }
        return try context.map(document, functions: functions)
    }
}

private func failure(_ outcome: Result<[EmittedRow], JavaScriptError>) -> JavaScriptError? {
    if case .failure(let error) = outcome { return error }
    return nil
}

private func rows(_ outcome: Result<[EmittedRow], JavaScriptError>) -> [[String]]? {
    (try? outcome.get())?.map { [$0.key, $0.value] }
}

private let healthyMap = "function (doc) { emit(doc._id, 1); }"

/// Imports `documents` (NDJSON) and the design document `design` (whose view
/// is `app/v`) into a fresh database with the `settee` tool, then queries the
/// view with `--verbose`; returns the query's outcome and the database's path.
private func queryWithTheTool(documents: String, design: String, in directory: TemporaryDirectory) throws
    -> (query: ChildProcess.Outcome, database: String) {
    let settee = try SetteeExecutable.find()
    let db = directory.url.appendingPathComponent("db").path
    let documentsFile = directory.file("docs.ndjson", contents: documents)
    let designFile = directory.file("design.json", contents: design)
    #expect(try settee.run(["--db", db, "import", documentsFile.path], in: directory.url).exitStatus == 0)
    #expect(try settee.run(["--db", db, "design", "load", designFile.path], in: directory.url).exitStatus == 0)
    let query = try settee.run(["--db", db, "query", "app/v", "--verbose"], in: directory.url)
    #expect(query.exitStatus == 0, "\(query.standardError)")
    return (query, db)
}

/// Runs `body` with a database of two workers in a fresh directory.
private func withDatabase(_ body: (Database, TemporaryDirectory) throws -> Void) throws {
    let directory = TemporaryDirectory()
    var options = Database.Options()
    options.javaScriptWorkers = 2
    options.javaScript.timeout = .seconds(2)
    let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
    try body(db, directory)
}

@Suite("Hostile JavaScript", .ownThread)
struct HostileJavaScriptTests {
    /// Each grows memory the GC heap limit does not see (or sees too late).
    static let memoryBombs = [
        "function (doc) { var a = []; while (true) a.push(new Uint8Array(16 << 20).fill(1)); }",
        "function (doc) { var a = []; while (true) a.push(new Array(1 << 20).fill(1.5)); }",
        "function (doc) { var a = [], s = 'x'.repeat(1 << 20); for (var i = 0; ; i++) a.push((s + i).toUpperCase()); }",
        "function (doc) { var s = 'x'.repeat(10000); for (var i = 0; ; i++) emit(i, s); }",
    ]

    @Test("Memory the heap limit misses is bounded: the call fails with out_of_memory, and the worker carries on",
          arguments: memoryBombs)
    func memoryBomb(_ source: String) throws {
        let started = ContinuousClock.now
        let result = try map(#"{"_id":"bomb"}"#, [source, healthyMap])
        let elapsed = ContinuousClock.now - started
        let error = try #require(failure(result.outcomes[0]))
        #expect(error.kind == .outOfMemory, "\(error)")
        #expect(elapsed < .seconds(20), "stopped by the memory bound, not the 30 s timeout")
        #expect(rows(result.outcomes[1]) == [[#""bomb""#, "1"]])
        let after = try map(#"{"_id":"next"}"#, [healthyMap])
        #expect(rows(after.outcomes[0]) == [[#""next""#, "1"]])
    }

    @Test("Memory the rest of the process takes during a call does not count against the call's bound")
    func memoryTakenElsewhere() throws {
        // Spins for a second and a half, holding next to nothing.
        let spin = "function (doc) { var end = Date.now() + 1500, n = 0; while (Date.now() < end) n++; emit(doc._id, n > 0); }"
        // What an earlier call on the worker wrote (rows past the bound, here) is not this call's either.
        let emitted = try map(#"{"_id":"bomb"}"#, [Self.memoryBombs[3]])
        #expect(failure(emitted.outcomes[0])?.kind == .outOfMemory)
        let held = Mutex<[UInt]>([])  // the addresses taken
        let calling = Mutex(false)
        let done = Mutex(false)
        let finished = DispatchSemaphore(value: 0)
        // Another thread of the process takes 256 MB (the call's bound is 96 MiB) once the call runs.
        let other = Thread {
            while !calling.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.001) }
            for _ in 0 ..< 64 where !done.withLock({ $0 }) {
                let chunk = malloc(4 << 20)!
                memset(chunk, 1, 4 << 20)
                held.withLock { $0.append(UInt(bitPattern: chunk)) }
                Thread.sleep(forTimeInterval: 0.005)
            }
            finished.signal()
        }
        other.start()
        defer {
            done.withLock { $0 = true }
            finished.wait()
            held.withLock { $0.forEach { free(UnsafeMutableRawPointer(bitPattern: $0)) } }
        }
        let (result, takenDuringCall) = try boundedWorker.run { context in
            let function = try context.compile(spin)
            calling.withLock { $0 = true }
            let result = try context.map(#"{"_id":"spin"}"#, functions: [function])
            return (result, held.withLock { $0.count })
        }
        #expect(takenDuringCall >= 32, "the other thread took more than the call's bound while it ran: \(takenDuringCall) × 4 MB")
        #expect(rows(result.outcomes[0]) == [[#""spin""#, "true"]], "\(result.outcomes[0])")
    }

    @Test("Memory bombs while indexing, in the settee tool: each is skipped, the others are indexed, peak memory stays bounded")
    func memoryBombInTheTool() throws {
        let directory = TemporaryDirectory()
        let (query, db) = try queryWithTheTool(documents: """
            {"_id": "a"}
            {"_id": "bomb", "bomb": true}
            {"_id": "c"}
            {"_id": "second-bomb", "bomb": true}
            """, design: #"""
            {"_id": "_design/app", "views": {"v": {"map":
              "function (doc) { if (doc.bomb) { var a = []; while (true) a.push(new Uint8Array(16 << 20).fill(1)); } emit(doc._id, null); }"}}}
            """#, in: directory)
        // Each bomb was stopped: by the memory bound, or on a machine too busy
        // to reach it in time (the in-process test above tells them apart) by
        // the 5 s time limit.
        // The log's lines (the summary that ends the update repeats the first errors, indented).
        let stopped = query.standardError.split(separator: "\n").filter { !$0.hasPrefix("  ") }.filter {
            $0.contains("out of memory: the call used more than 512 MiB") || $0.contains("function timed out")
        }
        #expect(stopped.count == 2, "\(query.standardError)")
        let result = try JSONValue(parsing: query.standardOutput)
        #expect(result["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["a", "c"])
        // The default bound is 512 MiB of growth per call, and what the first
        // bomb took is given back before the second (unbounded, this map grows
        // past 1.5 GB before its 5 s timeout).
        #expect(query.peakResidentBytes < 768 << 20, "peak \(query.peakResidentBytes >> 20) MiB")
        print("two memory bombs in `settee query`: peak resident \(query.peakResidentBytes >> 20) MiB; " +
              "\(stopped.filter { $0.contains("out of memory") }.count) of 2 stopped by the memory bound, the rest by the time limit")
        let info = try SetteeExecutable.find().run(["--db", db, "info"], in: directory.url)
        #expect(info.standardOutput.contains(#""map_errors":2"#), "\(info.standardOutput)")
    }

    @Test("Memory kept in globals between calls is bounded: the call past the bound fails, the globals are cleared, the next documents map",
          arguments: [
            // Typed arrays: outside the GC heap, so the heap limit never sees them.
            "function (doc) { if (typeof kept === 'undefined') kept = []; kept.push(new Uint8Array(4 << 20).fill(1)); emit(doc._id, kept.length); }",
            // Objects: they fill the heap, and without the bound every call after would fail.
            "function (doc) { if (typeof kept === 'undefined') kept = []; for (var i = 0; i < 50000; i++) kept.push({i: i, s: 'k' + i}); emit(doc._id, kept.length); }",
          ])
    func keptMemory(_ source: String) throws {
        var configuration = JavaScriptConfiguration()
        configuration.timeout = .seconds(30)
        configuration.heapLimitBytes = 64 << 20
        configuration.memoryLimitBytes = 96 << 20
        configuration.keptMemoryLimitBytes = 32 << 20
        let worker = try JavaScriptWorker(configuration: configuration)
        let started = ContinuousClock.now
        var failures: [JavaScriptError] = []
        var lengths: [Int] = []
        for number in 0..<150 {
            let result = try map(#"{"_id":"d\#(number)"}"#, [source, healthyMap], on: worker)
            if let error = failure(result.outcomes[0]) {
                failures.append(error)
                // The other function of the same call fails alike: its globals went too.
                #expect(failure(result.outcomes[1])?.kind == .outOfMemory)
            } else {
                let length = rows(result.outcomes[0])?.first.flatMap { Int($0[1]) }
                lengths.append(try #require(length))
                #expect(rows(result.outcomes[1]) == [[#""d\#(number)""#, "1"]])
            }
        }
        #expect(!failures.isEmpty, "150 calls each keeping 4 MB or 50,000 objects under a 32 MiB bound")
        #expect(failures.allSatisfy { $0.kind == .outOfMemory }, "\(failures)")
        #expect(failures.contains { $0.message.contains("between calls") && $0.message.contains("global variables were cleared") },
                "\(failures.map(\.message))")
        // After each reset the function starts again from an empty global.
        let first = try #require(lengths.first)
        #expect(lengths.filter { $0 == first }.count > 1, "\(lengths)")
        // Measured at each 8 MiB the heap grows past the bound, or 32 MiB the process
        // grows: 4 MB arrays or 3.3 MB of objects, kept by at most about twice the bound.
        #expect(lengths.allSatisfy { $0 <= 16 * first }, "\(lengths)")
        print("150 calls keeping memory in globals under a 32 MiB bound: \(failures.count) cleared, " +
              "longest kept \(lengths.max() ?? 0), \(ContinuousClock.now - started)")
    }

    @Test("A function using `require` works again after its globals are cleared")
    func keptMemoryWithLibrary() throws {
        var configuration = JavaScriptConfiguration()
        configuration.keptMemoryLimitBytes = 32 << 20
        let worker = try JavaScriptWorker(configuration: configuration)
        let library = #"{"views": {"lib": {"size": "exports.bytes = 4 << 20;"}}}"#
        let source = """
            function (doc) {
              if (typeof kept === 'undefined') kept = [];
              kept.push(new Uint8Array(require('views/lib/size').bytes).fill(1));
              emit(doc._id, kept.length);
            }
            """
        let outcomes = try worker.run { context in
            let function = try context.compile(source, name: "kept", library: library)
            return try (0..<60).map { number in
                try context.map(#"{"_id":"d\#(number)"}"#, functions: [function]).outcomes[0]
            }
        }
        let cleared = outcomes.indices.filter { failure(outcomes[$0])?.message.contains("global variables were cleared") == true }
        #expect(!cleared.isEmpty)
        for index in cleared where index + 1 < outcomes.count {
            #expect(rows(outcomes[index + 1]) == [[#""d\#(index + 1)""#, "1"]], "the call after a reset, at \(index + 1)")
        }
    }

    @Test("Memory kept in globals while indexing, in the settee tool: stays bounded, every document but the few at a reset is indexed")
    func keptMemoryInTheTool() throws {
        let (query, _) = try queryWithTheTool(
            documents: (0..<150).map { #"{"_id": "d\#($0)"}"# }.joined(separator: "\n"), design: #"""
            {"_id": "_design/app", "views": {"v": {"map":
              "function (doc) { if (typeof kept === 'undefined') kept = []; kept.push(new Uint8Array(4 << 20).fill(1)); emit(doc._id, null); }"}}}
            """#, in: TemporaryDirectory())
        let resets = query.standardError.split(separator: "\n").filter { !$0.hasPrefix("  ") && $0.contains("global variables were cleared") }
        #expect(!resets.isEmpty, "\(query.standardError)")
        let result = try JSONValue(parsing: query.standardOutput)
        let indexed = result["rows"]?.arrayValue?.count ?? 0
        #expect(indexed + resets.count == 150, "\(indexed) indexed, \(resets.count) reset")
        // Unbounded, the 150 × 4 MB kept took the process to 643 MiB. Two workers
        // may keep 128 MiB each.
        #expect(query.peakResidentBytes < 480 << 20, "peak \(query.peakResidentBytes >> 20) MiB")
        print("150 documents each keeping 4 MB in a global, in `settee query`: peak resident " +
              "\(query.peakResidentBytes >> 20) MiB, \(resets.count) resets, \(indexed) indexed")
    }

    @Test("Values thrown that are not Errors are reported as the doc's error; the next function runs",
          arguments: [
            ("throw null", "null"), ("throw undefined", "undefined"), ("throw 42", "42"),
            ("throw 'plain text'", "plain text"), ("throw Symbol('s')", ""), ("throw [1, {a: 2}]", #"[1,{"a":2}]"#),
            ("throw new Proxy({}, {ownKeys: function () { throw 1; }})", ""),
          ])
    func nonErrorThrows(_ statement: String, _ shown: String) throws {
        let result = try map(#"{"_id":"d"}"#, ["function (doc) { \(statement); }", healthyMap])
        let error = try #require(failure(result.outcomes[0]))
        #expect(error.kind == .runtime)
        if !shown.isEmpty { #expect(error.message.contains(shown), "\(error.message)") }
        #expect(rows(result.outcomes[1]) == [[#""d""#, "1"]])
    }

    @Test("Values JSON cannot hold are an error for that doc; the rest become null as in CouchDB")
    func unserialisableEmits() throws {
        let result = try map(#"{"_id":"d"}"#, [
            "function (doc) { emit(1n, null); }",
            "function (doc) { emit(1, {get x() { throw new Error('getter'); }}); }",
            "function (doc) { var a = []; for (var i = 0; i < 100000; i++) a = [a]; emit(a, null); }",
            "function (doc) { emit(Symbol('k'), [function () {}, undefined, NaN, -Infinity]); }",
            healthyMap,
        ])
        #expect(failure(result.outcomes[0])?.message.contains("BigInt") == true)
        #expect(failure(result.outcomes[1])?.message.contains("getter") == true)
        #expect(failure(result.outcomes[2])?.message.contains("too much recursion") == true)
        #expect(rows(result.outcomes[3]) == [["null", "[null,null,null,null]"]])
        #expect(rows(result.outcomes[4]) == [[#""d""#, "1"]])
    }

    @Test("A view cannot replace emit, log or CouchDB's helpers for the views after it")
    func globalsStayPut() throws {
        let result = try map(#"{"_id":"d","v":[1,2]}"#, [
            "function (doc) { emit = function () {}; log = null; sum = null; isArray = null; toJSON = null; emit('first', 0); }",
            "function (doc) { 'use strict'; emit = function () {}; }",
            "function (doc) { emit(doc._id, [sum(doc.v), isArray(doc.v), toJSON(doc.v)]); log('still here'); }",
        ])
        #expect(rows(result.outcomes[0]) == [[#""first""#, "0"]])
        #expect(failure(result.outcomes[1])?.message.contains("read-only") == true)
        #expect(rows(result.outcomes[2]) == [[#""d""#, #"[3,true,"[1,2]"]"#]])
        #expect(result.logs == ["still here"])
    }

    @Test("There is no way to the host: no file, network, process or module loading")
    func noHostAccess() throws {
        let probes = ["require", "process", "os", "read", "readFile", "load", "snarf", "quit", "print", "fetch",
                      "XMLHttpRequest", "WebSocket", "importScripts", "Components", "ctypes", "scriptArgs", "setTimeout"]
        let list = probes.map { "'\($0)'" }.joined(separator: ",")
        let result = try map(#"{"_id":"d"}"#, [
            "function (doc) { [\(list)].forEach(function (name) { emit(name, typeof globalThis[name]); }); }",
            "function (doc) { emit(Function('return 1')(), null); }",
            "function (doc) { var p = import('fs'); emit(p instanceof Promise, p); }",
        ])
        let found = try #require(rows(result.outcomes[0]))
        #expect(found == probes.map { [#""\#($0)""#, #""undefined""#] })
        #expect(failure(result.outcomes[1])?.kind == .runtime)
        // Dynamic import gives a promise that is rejected, and fails the document: there is no module loader.
        #expect(failure(result.outcomes[2]) != nil, "\(result.outcomes[2])")
        // With views.lib, require resolves inside it and nowhere else.
        let outside = try boundedWorker.run { context in
            let function = try context.compile(
                "function (doc) { emit(require('fs'), null); }", library: #"{"views":{"lib":{"util":"exports.x = 1;"}}}"#)
            return try context.map(#"{"_id":"d"}"#, functions: [function]).outcomes[0]
        }
        #expect(failure(outside)?.message.contains("invalid_require_path") == true, "\(String(describing: failure(outside)))")
    }

    @Test("Every hostile function at once in a real index: each bad doc is skipped and counted, the rest is indexed, queries work")
    func hostileViewsInAnIndex() throws {
        try withDatabase { db, directory in
            let hostile = [
                "loop": "while (true) {}",
                "recurse": "(function f() { return f() + 1; })()",
                "throw": "throw {forbidden: 'no'}",
                "mutate": "Object.defineProperty(doc, 'n', {value: 0})",
                "eval": "eval('1')",
                "cyclic": "var o = {}; o.o = o; emit(1, o)",
                "deep": "var a = []; for (var i = 0; i < 2000; i++) a = [a]; emit(a, null)",
            ]
            let map = "function (doc) { if (doc.kind && doc.kind !== 'ok') { " +
                hostile.map { "if (doc.kind === '\($0.key)') { \($0.value); }" }.joined(separator: " ") +
                " } emit(doc._id, doc.n); }"
            let design = #"{"_id": "_design/h", "views": {"v": {"map": \#(JSONValue.string(map).jsonText), "reduce": "_sum"}}}"#
            try db.loadDesignDocuments(from: directory.file("h.json", contents: design))
            var expected: [String] = []
            var expectedSum = 0
            for (n, kind) in (["ok"] + hostile.keys.sorted() + ["ok"]).enumerated() {
                let id = String(format: "d%02d", n)
                try db.put(#"{"_id": "\#(id)", "kind": "\#(kind)", "n": \#(n)}"#)
                if kind == "ok" {
                    expected.append(id)
                    expectedSum += n
                }
            }
            let result = try db.query("h/v", options: ViewQueryOptions(parameters: [(name: "reduce", value: "false")]))
            #expect(result.rows.compactMap(\.id) == expected)
            #expect(try db.viewInfo().first?.mapErrors == hostile.count)
            let total = try db.query("h/v", options: ViewQueryOptions(parameters: []))
            #expect(total.rows.first?.valueJSON == "\(expectedSum)")
        }
    }

    @Test("A reduce that runs away fails that query with a clear error, one that throws reduces to null (as CouchDB's views.js); the next query works")
    func hostileReduce() throws {
        try withDatabase { db, directory in
            let design = #"""
                {"_id": "_design/r", "views": {
                  "loop": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "function (k, v) { while (true) {} }"},
                  "throws": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "function (k, v) { throw 'no reduce'; }"},
                  "fine": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "function (k, v) { return sum(v); }"}}}
                """#
            try db.loadDesignDocuments(from: directory.file("r.json", contents: design))
            for n in 0..<3 { try db.put(#"{"_id": "d\#(n)"}"#) }
            let started = ContinuousClock.now
            #expect(throws: (any Error).self) { try db.query("r/loop", options: ViewQueryOptions(parameters: [])) }
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(try db.query("r/throws", options: ViewQueryOptions(parameters: [])).json == #"{"rows":[{"key":null,"value":null}]}"#)
            #expect(try db.query("r/fine", options: ViewQueryOptions(parameters: [])).rows.first?.valueJSON == "3")
            #expect(try db.query("r/loop", options: ViewQueryOptions(parameters: [(name: "reduce", value: "false")])).rows.count == 3)
        }
    }
}
