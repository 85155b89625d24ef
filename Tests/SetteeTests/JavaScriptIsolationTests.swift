import Foundation
import Testing
import SetteeJavaScript
@testable import Settee

private let worker: JavaScriptWorker = {
    var configuration = JavaScriptConfiguration()
    configuration.timeout = .seconds(2)
    return try! JavaScriptWorker(configuration: configuration)
}()

/// Compiles `sources` (each with `library`, if any) and maps `document` with them.
private func map(_ document: String, _ sources: [String], library: String? = nil) throws -> DocumentMapResult {
    try worker.run { context in
        let functions = try sources.map { try context.compile($0, library: library) }
        return try context.map(document, functions: functions)
    }
}

private func rows(_ outcome: Result<[EmittedRow], JavaScriptError>) -> [[String]]? {
    (try? outcome.get())?.map { [$0.key, $0.value] }
}

private func failure(_ outcome: Result<[EmittedRow], JavaScriptError>) -> JavaScriptError? {
    if case .failure(let error) = outcome { return error }
    return nil
}

@Suite("JavaScript: promises", .ownThread)
struct JavaScriptPromiseTests {
    @Test("A map function that uses a Promise or async/await runs its reactions before the document's rows are taken", arguments: [
        "function (doc) { Promise.resolve(1).then(function () {}); emit(1, 1); }",
        "function (doc) { Promise.resolve(1).then(function (n) { emit(n, 1); }); }",
        "async function (doc) { await null; emit(1, 1); }",
        "function (doc) { (async function () { emit(await Promise.resolve(1), 1); })(); }",
    ])
    func promises(_ source: String) throws {
        let result = try map(#"{"_id":"a"}"#, [source])
        #expect(rows(result.outcomes[0]) == [["1", "1"]], "\(result.outcomes[0])")
    }

    @Test("A rejected reaction fails that document's map only; a later document maps again")
    func rejectedReaction() throws {
        let source = "function (doc) { Promise.resolve().then(function () { if (doc.bad) throw new Error('no ' + doc._id); emit(doc._id, 1); }); }"
        let bad = try map(#"{"_id":"a","bad":true}"#, [source, "function (doc) { emit('other', 1); }"])
        #expect(failure(bad.outcomes[0])?.message.contains("no a") == true, "\(bad.outcomes[0])")
        #expect(rows(bad.outcomes[1]) == [[#""other""#, "1"]])
        let good = try map(#"{"_id":"b"}"#, [source])
        #expect(rows(good.outcomes[0]) == [[#""b""#, "1"]])
    }

    @Test("A never-ending chain of reactions is stopped by the call's time limit, and the worker carries on")
    func endlessReactions() throws {
        let result = try map(#"{"_id":"a"}"#, ["function (doc) { (function loop() { Promise.resolve().then(loop); })(); }"])
        #expect(failure(result.outcomes[0])?.kind == .timeout, "\(result.outcomes[0])")
        let after = try map(#"{"_id":"b"}"#, ["function (doc) { Promise.resolve(doc._id).then(function (id) { emit(id, 2); }); }"])
        #expect(rows(after.outcomes[0]) == [[#""b""#, "2"]])
    }

    @Test("Reactions left by one function never run in another's call")
    func reactionsStayWithTheirCall() throws {
        let result = try map(#"{"_id":"a"}"#, [
            "function (doc) { Promise.resolve().then(function () { emit('first', 1); }); }",
            "function (doc) { emit('second', 2); }",
        ])
        #expect(rows(result.outcomes[0]) == [[#""first""#, "1"]])
        #expect(rows(result.outcomes[1]) == [[#""second""#, "2"]])
    }
}

@Suite("JavaScript: each function in a realm of its own", .ownThread)
struct JavaScriptIsolationTests {
    static let polluters = [
        #"function (doc) { String.prototype.toUpperCase = function () { return "PWNED"; }; }"#,
        #"function (doc) { Array.prototype.map = function () { return ["PWNED"]; }; }"#,
        #"function (doc) { JSON.stringify = function () { return '"PWNED"'; }; }"#,
        #"function (doc) { Object.defineProperty(Object.prototype, "type", { get: function () { return "pwned"; }, configurable: true }); }"#,
        #"function (doc) { try { Object.getPrototypeOf(doc).type = "pwned"; } catch (e) {} try { Object.getPrototypeOf(doc.tags).map = function () { return ["PWNED"]; }; } catch (e) {} }"#,
        #"function (doc) { try { Object.getPrototypeOf(doc.tags[Symbol.iterator]()).next = function () { return { done: true }; }; } catch (e) {} }"#,
        #"function (doc) { toUpper = "PWNED"; this.sum = function () { return -1; }; }"#,
    ]
    static let victim = #"""
        function (doc) {
          var tags = [];
          for (var tag of doc.tags) tags.push(tag);
          emit(doc.type.toUpperCase(), [doc.tags.map(function (t) { return t; }), JSON.stringify(doc.n), tags, typeof toUpper, sum([1, 2])]);
        }
        """#
    static let document = #"{"_id":"o1","type":"order","tags":["x","y"],"n":1}"#
    static let expected = [[#""ORDER""#, #"[["x","y"],"1",["x","y"],"undefined",3]"#]]

    @Test("What one function does to built-ins and globals is not seen by the next, in the same call or later", arguments: polluters)
    func isolated(_ polluter: String) throws {
        let together = try map(Self.document, [polluter, Self.victim])
        #expect(rows(together.outcomes[1]) == Self.expected, "\(together.outcomes)")
        let later = try map(Self.document, [Self.victim])
        #expect(rows(later.outcomes[0]) == Self.expected, "\(later.outcomes)")
    }

    @Test("Internal helpers are not reachable: a document's code cannot be run through them")
    func noInternalHelpers() throws {
        let result = try map(#"{"_id":"a","code":"emit('ran', 1)"}"#, [
            "function (doc) { emit(typeof __settee_makeRequire, typeof __settee_compileModule); }",
            "function (doc) { __settee_makeRequire({m: doc.code})('m'); }",
        ])
        #expect(rows(result.outcomes[0]) == [[#""undefined""#, #""undefined""#]])
        #expect(failure(result.outcomes[1]) != nil)
    }

    @Test("A views.lib module may require another by its path from the design document's root")
    func requireFromModule() throws {
        let library = #"{"views":{"lib":{"helper":"exports.twice = function (n) { return 2 * n; };","user":"var h = require('views/lib/helper'); exports.four = h.twice(2);"}}}"#
        let result = try map(#"{"_id":"a"}"#, ["function (doc) { emit(require('views/lib/user').four, 1); }"], library: library)
        #expect(rows(result.outcomes[0]) == [["4", "1"]], "\(result.outcomes[0])")
    }

    @Test("A views.lib module that throws as it loads fails every require, not only the first")
    func throwingModule() throws {
        let library = #"{"views":{"lib":{"bad":"exports.value = 1; throw new Error('broken module');"}}}"#
        let source = "function (doc) { emit(require('views/lib/bad').value, 1); }"
        for id in ["a", "b"] {
            let result = try map(#"{"_id":"\#(id)"}"#, [source], library: library)
            #expect(failure(result.outcomes[0])?.message.contains("broken module") == true, "\(id): \(result.outcomes[0])")
        }
    }

    @Test("A document that emits more than the emit bound fails with its own map error; other documents are mapped")
    func emitBound() throws {
        var configuration = JavaScriptConfiguration()
        configuration.emitLimitBytes = 1 << 20
        // The bound is on bytes, not time: a busy machine may take past the default 5 s over 100,000 refused emits.
        configuration.timeout = .seconds(120)
        let bounded = try JavaScriptWorker(configuration: configuration)
        let source = "function (doc) { var s = 'x'.repeat(1000); for (var i = 0; i < doc.n; i++) { try { emit(i, s); } catch (e) {} } }"
        let result = try bounded.run { context in
            let function = try context.compile(source)
            return (try context.map(#"{"_id":"big","n":100000}"#, functions: [function]),
                    try context.map(#"{"_id":"small","n":2}"#, functions: [function]))
        }
        let error = try #require(failure(result.0.outcomes[0]))
        #expect(error.message.contains("emitted more than 1048576 bytes"), "\(error)")
        #expect(rows(result.1.outcomes[0])?.count == 2)
    }
}

@Suite("Design documents are isolated from each other", .ownThread)
struct DesignDocumentIsolationTests {
    @Test("A design document that changes built-ins does not change another's rows, whichever is indexed first")
    func isolatedIndexes() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(#"{"_id":"o1","type":"order","tags":["a"]}"#)
        try db.put(#"""
            {"_id":"_design/a","views":{"evil":{"map":"function (doc) { String.prototype.toUpperCase = function () { return 'PWNED'; }; Array.prototype.map = function () { return ['PWNED']; }; JSON.stringify = function () { return 'PWNED'; }; emit(doc._id, null); }"}}}
            """#)
        try db.put(#"""
            {"_id":"_design/b","views":{"v":{"map":"function (doc) { emit(doc.type.toUpperCase(), [doc.tags.map(function (t) { return t; }), JSON.stringify(1)]); }"}}}
            """#)
        _ = try db.query("a/evil")
        let result = try db.query("b/v")
        #expect(result.rows.map { $0.keyJSON } == [#""ORDER""#])
        #expect(result.rows.map { $0.valueJSON } == [#"[["a"],"1"]"#])
    }
}
