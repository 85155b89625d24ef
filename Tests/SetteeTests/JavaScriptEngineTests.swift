import Foundation
import Testing
import SetteeJavaScript
@testable import Settee

/// One worker shared by the tests of this suite (creating a context costs ~17 ms).
private let worker: JavaScriptWorker = {
    var configuration = JavaScriptConfiguration()
    configuration.timeout = .milliseconds(500)
    configuration.heapLimitBytes = 64 << 20
    return try! JavaScriptWorker(configuration: configuration)
}()

private func map(_ document: String, _ sources: [String]) throws -> DocumentMapResult {
    try worker.run { context in
        let functions = try sources.map { try context.compile($0) }
        return try context.map(document, functions: functions)
    }
}

private func rows(_ result: Result<[EmittedRow], JavaScriptError>) -> [[String]] {
    (try? result.get())?.map { [$0.key, $0.value] } ?? [["failed"]]
}

@Suite("JavaScript engine", .ownThread)
struct JavaScriptEngineTests {
    @Test("Several map functions run on one document parsed once")
    func severalFunctions() throws {
        let result = try map(
            #"{"_id":"a","name":"Ann","tags":["x","y"],"n":1.5}"#,
            [
                "function (doc) { emit(doc.name, null); }",
                "function(doc) { doc.tags.forEach(function (t) { emit([t, doc._id], {n: doc.n}); }); };",
                "function(doc) { if (doc.missing) emit(1, 2); } // nothing",
            ])
        #expect(result.outcomes.count == 3)
        #expect(rows(result.outcomes[0]) == [[#""Ann""#, "null"]])
        #expect(rows(result.outcomes[1]) == [[#"["x","a"]"#, #"{"n":1.5}"#], [#"["y","a"]"#, #"{"n":1.5}"#]])
        #expect(rows(result.outcomes[2]) == [])
    }

    @Test("Emitted values are serialised as JSON.stringify does")
    func serialisation() throws {
        let result = try map(#"{"s":"é\n\"\u0001😀"}"#, [
            """
            function (doc) {
              emit(undefined, NaN);
              emit(Infinity, [undefined, function () {}, -0, 1e21, 1e-7, 0.1, 2147483648]);
              emit({a: undefined, b: 1, f: function () {}}, doc.s);
              emit(new Date(0), [new String("s"), new Number(3), new Boolean(false)]);
              emit("\\ud800", true);
            }
            """,
        ])
        #expect(rows(result.outcomes[0]) == [
            ["null", "null"],
            ["null", "[null,null,0,1e+21,1e-7,0.1,2147483648]"],
            [#"{"b":1}"#, #""é\n\"\u0001😀""#],
            [#""1970-01-01T00:00:00.000Z""#, #"["s",3,false]"#],
            [#""\ud800""#, "true"],
        ])
    }

    @Test("A syntax error is a compile error with its line and column")
    func compileErrorPosition() throws {
        let error = try #require(throws: JavaScriptError.self) {
            try worker.run { context in try context.compile("function (doc) {\n  emit(doc.x,, 1);\n}") }
        }
        #expect(error.kind == .compile)
        #expect(error.message.contains("SyntaxError"))
        #expect(error.line == 2)
        #expect(error.column == 14)
    }

    @Test("A column on the first line is counted in the user's source")
    func compileErrorFirstLine() throws {
        let error = try #require(throws: JavaScriptError.self) {
            try worker.run { context in try context.compile("function (doc) { emit(doc.x,, 1); }") }
        }
        #expect(error.line == 1)
        #expect(error.column == 29)
    }

    @Test("An interrupted compile is not remembered: the same source compiles on the next try")
    func interruptedCompileIsNotKept() throws {
        // A worker of its own: the interrupt must reach no other test's call.
        let own = try JavaScriptWorker()
        let source = "function (doc) { emit(doc._id, 1); }"
        // With no call running, the interrupt stops the next one.
        own.interrupt()
        let error = try #require(throws: JavaScriptError.self) { try own.run { try $0.compile(source) } }
        #expect(error.kind == .interrupted)
        let result = try own.run { context in try context.map(#"{"_id":"a"}"#, functions: [try context.compile(source)]) }
        #expect(rows(result.outcomes[0]) == [[#""a""#, "1"]])
    }

    @Test("A source that is not a function is a compile error, as CouchDB says it")
    func notAFunction() throws {
        let error = try #require(throws: JavaScriptError.self) {
            try worker.run { context in try context.compile("42") }
        }
        #expect(error.kind == .compile)
        #expect(error.message.hasPrefix("Expression does not eval to a function."))
    }

    @Test("A map function that throws emits nothing for that doc; the others still run")
    func throwingMap() throws {
        let result = try map(#"{"_id":"d1"}"#, [
            "function (doc) { emit(1, 1); doc.a.b.c; }",
            "function (doc) { emit(doc._id, 2); }",
            "function (doc) { throw {forbidden: 'no'}; }",
        ])
        guard case .failure(let error) = result.outcomes[0] else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.kind == .runtime)
        #expect(error.message.contains("TypeError"))
        #expect(error.line == 1)
        #expect(!error.stack.isEmpty)
        #expect(rows(result.outcomes[1]) == [[#""d1""#, "2"]])
        guard case .failure(let thrown) = result.outcomes[2] else {
            Issue.record("expected a failure")
            return
        }
        #expect(thrown.message == #"{"forbidden":"no"}"#)
    }

    @Test("Documents are frozen before map")
    func frozenDocuments() throws {
        let result = try map(#"{"a":{"b":1}}"#, [
            "function (doc) { 'use strict'; doc.a.b = 2; emit(1, 1); }",
            "function (doc) { doc.a.b = 2; emit(doc.a.b, 1); }",
        ])
        guard case .failure(let error) = result.outcomes[0] else {
            Issue.record("a strict-mode write to a frozen doc must throw")
            return
        }
        #expect(error.message.contains("read-only") || error.message.contains("not writable"))
        #expect(rows(result.outcomes[1]) == [["1", "1"]])
    }

    @Test("while(true){} is stopped by the timeout and the worker stays usable")
    func infiniteLoop() throws {
        let started = ContinuousClock.now
        let result = try map("{}", ["function (doc) { while (true) {} }"])
        let elapsed = ContinuousClock.now - started
        guard case .failure(let error) = result.outcomes[0] else {
            Issue.record("expected a timeout")
            return
        }
        #expect(error.kind == .timeout)
        #expect(elapsed < .seconds(3))
        let after = try map(#"{"x":1}"#, ["function (doc) { emit(doc.x, null); }"])
        #expect(rows(after.outcomes[0]) == [["1", "null"]])
    }

    @Test("Deep recursion is an error, not a crash")
    func deepRecursion() throws {
        let result = try map("{}", ["function (doc) { function f(n) { return f(n + 1) + 1; } f(0); }"])
        guard case .failure(let error) = result.outcomes[0] else {
            Issue.record("expected an error")
            return
        }
        #expect(error.kind == .runtime)
        #expect(error.message.contains("too much recursion"))
        let after = try map("{}", ["function (doc) { emit(1, 1); }"])
        #expect(rows(after.outcomes[0]) == [["1", "1"]])
    }

    @Test("Running out of the heap limit is an error and the context is usable after")
    func outOfMemory() throws {
        let result = try map("{}", ["function (doc) { var a = []; while (true) { a.push({x: [1, 2, 3], y: 'abc' + a.length}); } }"])
        guard case .failure(let error) = result.outcomes[0] else {
            Issue.record("expected an error")
            return
        }
        #expect(error.kind == .outOfMemory || error.kind == .timeout)
        let after = try map("{}", ["function (doc) { emit([1, 2], 'ok'); }"])
        #expect(rows(after.outcomes[0]) == [["[1,2]", #""ok""#]])
    }

    @Test("eval and new Function are blocked")
    func codeGenerationBlocked() throws {
        let result = try map("{}", [
            "function (doc) { emit(eval('1 + 1'), null); }",
            "function (doc) { emit(new Function('return 1')(), null); }",
        ])
        for outcome in result.outcomes {
            guard case .failure(let error) = outcome else {
                Issue.record("expected eval to be blocked")
                continue
            }
            #expect(error.kind == .runtime)
        }
    }

    @Test("CouchDB's globals: sum, isArray, toJSON, log")
    func globals() throws {
        let result = try map(#"{"v":[1,2,3.5]}"#, [
            "function (doc) { log('mapping'); log({a: 1}); emit(sum(doc.v), [isArray(doc.v), isArray(doc), toJSON(doc.v)]); }",
        ])
        #expect(rows(result.outcomes[0]) == [["6.5", #"[true,false,"[1,2,3.5]"]"#]])
        #expect(result.logs == ["mapping", #"{"a":1}"#])
    }

    @Test("require loads CommonJS modules from views.lib")
    func requireFromLibrary() throws {
        let library = #"{"views":{"lib":{"util":"exports.norm = function (s) { return s.toLowerCase(); }; exports.twice = require('./math').twice;","math":"exports.twice = function (x) { return 2 * x; };"}}}"#
        let rows = try worker.run { context in
            let function = try context.compile(
                "function (doc) { var u = require('views/lib/util'); emit(u.norm(doc.name), u.twice(3)); }",
                library: library)
            return try context.map(#"{"name":"ANN"}"#, functions: [function]).outcomes[0].get()
        }
        #expect(rows == [EmittedRow(key: #""ann""#, value: "6")])
    }

    @Test("reduce and rereduce")
    func reduceAndRereduce() throws {
        let (first, second) = try worker.run { context in
            let reduce = try context.compile("function (keys, values, rereduce) { return rereduce ? sum(values) * 10 : sum(values); }")
            let first = try context.reduce([reduce], keysJSON: #"[[1,"a"],[2,"b"]]"#, valuesJSON: "[1,2,3]", rereduce: false)
            let second = try context.reduce([reduce], keysJSON: "null", valuesJSON: "[6,4]", rereduce: true)
            return (try first.results[0].get(), try second.results[0].get())
        }
        #expect(first == "6")
        #expect(second == "100")
    }

    @Test("Keys passed to reduce are [key, id] pairs")
    func reduceSeesKeys() throws {
        let result = try worker.run { context in
            let reduce = try context.compile("function (keys, values) { return keys.map(function (k) { return k[1]; }); }")
            return try context.reduce([reduce], keysJSON: #"[["k","doc1"],["k","doc2"]]"#, valuesJSON: "[1,1]", rereduce: false).results[0].get()
        }
        #expect(result == #"["doc1","doc2"]"#)
    }

    @Test("Two workers map in parallel")
    func parallelWorkers() throws {
        let pool = try JavaScriptWorkerPool(count: 2)
        let documents = (0..<2000).map { #"{"_id":"d\#($0)","n":\#($0)}"# }
        let results = try pool.map(documents, functions: ["function (doc) { emit(doc.n * 2, doc._id); }"])
        #expect(results.count == 2000)
        for (n, result) in results.enumerated() {
            #expect(rows(result.outcomes[0]) == [["\(n * 2)", #""d\#(n)""#]])
        }
    }

    @Test("A document the engine cannot parse is an invalid-input error")
    func invalidDocument() throws {
        let error = try #require(throws: JavaScriptError.self) {
            try map("{not json", ["function (doc) { emit(1, 1); }"])
        }
        #expect(error.kind == .invalidInput)
    }

    @Test("Cyclic emitted values are an error for that doc")
    func cyclicValue() throws {
        let result = try map("{}", ["function (doc) { var a = {}; a.self = a; emit(1, a); }"])
        guard case .failure(let error) = result.outcomes[0] else {
            Issue.record("expected an error")
            return
        }
        #expect(error.message.contains("cyclic"))
    }
}
