import Foundation
import Testing
@testable import Settee

/// A database with one design document whose views emit a document's `k`
/// member as key, and `k` as value.
private struct Fixture {
    let directory = TemporaryDirectory()
    let db: Database

    init(maximumDocumentBytes: Int? = nil) throws {
        var options = Database.Options()
        options.javaScriptWorkers = 2
        if let maximumDocumentBytes { options.maximumDocumentBytes = maximumDocumentBytes }
        db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: #"""
            {"_id": "_design/app", "views": {
              "by_k": {"map": "function (doc) { if ('k' in doc) emit(doc.k, null); }"},
              "count": {"map": "function (doc) { if ('k' in doc) emit(doc.k, 1); }", "reduce": "_count"},
              "ids": {"map": "function (doc) { emit(doc._id, doc._id.length); }"}}}
            """#))
        try db.put(#"{"_id": "before", "k": "before"}"#)
    }

    func query(_ view: String, _ parameters: [(String, String)] = []) throws -> ViewResult {
        try db.query("app/" + view, options: ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) }))
    }

    func put(bytes: [UInt8]) throws -> WriteResult {
        try bytes.withUnsafeBytes { try db.put(json: $0) }
    }

    /// What was written before the hostile input is still there, and the views still answer.
    func expectIntact(sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try db.document("before")?.json.contains(#""k":"before""#) == true, sourceLocation: sourceLocation)
        #expect(try query("by_k", [("key", #""before""#)]).rows.map(\.id) == ["before"], sourceLocation: sourceLocation)
    }
}

private func documentError(_ body: () throws -> Void) throws -> DocumentError {
    try #require(throws: DocumentError.self) { try body() }
}

@Suite("Hostile documents and queries", .ownThread)
struct HostileInputTests {
    @Test("Malformed documents are refused with a reason and where; nothing is written", arguments: [
        ([0x7B, 0x22, 0x6B, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D], "invalid UTF-8"),  // {"k":"\xC3("}
        ([0x7B, 0x22, 0x6B, 0x22, 0x3A, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x7D], "a UTF-8-encoded surrogate"),
        ([0x7B, 0x22, 0x6B, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], "a byte that is never UTF-8"),
        (Array(String(repeating: "[", count: 100_000).utf8), "nesting 100k deep"),
        (Array((#"{"k":"# + String(repeating: "[", count: 100_000)).utf8), "nesting 100k deep in a member"),
        (Array(#"{"k": 1e400}"#.utf8), "a number beyond double range"),
        (Array(#"{"k": -1e400}"#.utf8), "a negative number beyond double range"),
        (Array(#"{"k": NaN}"#.utf8), "NaN"),
        (Array(#"{"k": "a"} trailing"#.utf8), "trailing text"),
        (Array(#"{"_id": "a\u0000b"#.utf8), "a truncated document"),
        ([], "nothing"),
    ] as [([UInt8], String)])
    func malformedDocuments(_ bytes: [UInt8], _ what: String) throws {
        let fixture = try Fixture()
        let sequence = try fixture.db.lastSequence()
        let error = try documentError { _ = try fixture.put(bytes: bytes) }
        #expect(error.code == .badRequest, "\(what): \(error)")
        #expect(error.reason.hasPrefix("invalid JSON: ") && error.reason.contains(" at line 1, column "), "\(what): \(error)")
        #expect(try fixture.db.lastSequence() == sequence, "\(what) took no sequence number")
        try fixture.expectIntact()
    }

    @Test("Document ids: empty and huge refused; NUL, lone surrogates and the longest allowed stored, found and indexed")
    func hostileIDs() throws {
        let fixture = try Fixture()
        #expect(try documentError { try fixture.db.put(#"{"_id": ""}"#) }.reason == "Document id must not be empty")
        let tooLong = try documentError { try fixture.db.put(JSONValue.object([("_id", .string(String(repeating: "h", count: 100_000)))]).jsonText) }
        #expect(tooLong.reason == "Document id must not be longer than 511 bytes")
        let huge = String(repeating: "h", count: 511)
        let ids = ["a\u{0}b", "\u{0}", huge, "é😀\u{200B}", "\\ud800 lone"]
        for id in ids {
            let json = JSONValue.object([("_id", .string(id)), ("k", 1)]).jsonText
            let written = try fixture.db.put(json)
            #expect(written.id == id)
            #expect(try fixture.db.document(id)?.id == id)
        }
        let lone = try fixture.db.put(#"{"_id": "x\ud800y", "k": "\udc00"}"#)
        #expect(try fixture.db.document(lone.id) != nil)
        let rows = try fixture.query("ids").rows
        #expect(Set(rows.compactMap(\.id)) == Set(ids + [lone.id, "before"]))
        #expect(rows.first { $0.id == huge }?.valueJSON == "511")
        #expect(try fixture.query("ids", [("key", JSONValue.string(huge).jsonText)]).rows.map(\.id) == [huge])
        try fixture.expectIntact()
    }

    @Test("Duplicate members: the document keeps them, map functions see the last, as JavaScript's JSON.parse")
    func duplicateMembers() throws {
        let fixture = try Fixture()
        try fixture.db.put(#"{"_id": "dup", "k": "first", "k": "last"}"#)
        #expect(try fixture.query("by_k", [("key", #""last""#)]).rows.map(\.id) == ["dup"])
        #expect(try fixture.query("by_k", [("key", #""first""#)]).rows.isEmpty)
        try fixture.expectIntact()
    }

    @Test("A 64 MB document, under a limit raised for it, is stored, read back and mapped")
    func largeDocument() throws {
        let fixture = try Fixture(maximumDocumentBytes: 80 << 20)
        let padding = String(repeating: "p", count: 64 << 20)
        try fixture.db.put(#"{"_id": "large", "k": "large", "pad": "\#(padding)"}"#)
        #expect(try fixture.db.document("large")?.json.utf8.count ?? 0 > 64 << 20)
        #expect(try fixture.query("by_k", [("key", #""large""#)]).rows.map(\.id) == ["large"])
        try fixture.expectIntact()
    }

    @Test("Keys far past LMDB's key size — a 100k-element array, a 1 MB string — are indexed, sorted and found")
    func hugeKeys() throws {
        let fixture = try Fixture()
        let array = "[" + (0..<100_000).map(String.init).joined(separator: ",") + "]"
        let arrayLonger = "[" + (0..<100_000).map(String.init).joined(separator: ",") + ",0]"
        let string = JSONValue.string(String(repeating: "s", count: 1 << 20)).jsonText
        try fixture.db.put(#"{"_id": "array", "k": \#(array)}"#)
        try fixture.db.put(#"{"_id": "array-longer", "k": \#(arrayLonger)}"#)
        try fixture.db.put(#"{"_id": "string", "k": \#(string)}"#)
        #expect(try fixture.query("by_k").rows.compactMap(\.id) == ["before", "string", "array", "array-longer"])
        #expect(try fixture.query("by_k", [("key", array)]).rows.map(\.id) == ["array"])
        #expect(try fixture.query("by_k", [("key", string)]).rows.map(\.id) == ["string"])
        #expect(try fixture.query("count", [("startkey", array)]).rows.first?.valueJSON == "2")
        // Deleting removes the long rows too.
        let rev = try #require(try fixture.db.document("array")).revision
        try fixture.db.delete("array", revision: rev)
        #expect(try fixture.query("by_k").rows.compactMap(\.id) == ["before", "string", "array-longer"])
    }

    /// The parser's messages are checked word for word in ViewQueryOptionsTests;
    /// here each goes through a real query, and the database carries on.
    @Test("Query parameters that are malformed, negative, contradictory or absurd are refused with CouchDB's error", arguments: [
        ([("key", "{not json")], "bad_request"), ([("keys", "[1,")], "bad_request"), ([("startkey", "")], "bad_request"),
        ([("key", String(repeating: "[", count: 100_000))], "bad_request"), ([("keys", #"{"a":1}"#)], "query_parse_error"),
        ([("limit", "-1")], "query_parse_error"), ([("skip", "-5")], "query_parse_error"),
        ([("group_level", "-1")], "query_parse_error"), ([("limit", "1e3")], "query_parse_error"),
        ([("limit", "99999999999999999999999999")], "query_parse_error"), ([("descending", "yes")], "query_parse_error"),
        ([("key", "1"), ("keys", "[1,2]")], "query_parse_error"), ([("startkey", "2"), ("endkey", "1")], "query_parse_error"),
        ([("group", "false"), ("group_level", "1")], "query_parse_error"),
        ([("include_docs", "true"), ("reduce", "true")], "query_parse_error"), ([("stale", "never")], "query_parse_error"),
    ] as [([(String, String)], String)])
    func badParameters(_ parameters: [(String, String)], _ code: String) throws {
        let fixture = try Fixture()
        let error = try #require(throws: QueryError.self) {
            _ = try fixture.query("count", parameters)
        }
        #expect(error.error == code, "\(parameters): \(error)")
        #expect(!error.reason.isEmpty)
        try fixture.expectIntact()
    }

    @Test("Huge but valid parameters: limit and skip far past the rows, group_level past the key's length")
    func absurdButValidParameters() throws {
        let fixture = try Fixture()
        try fixture.db.put(#"{"_id": "a", "k": [1, 2]}"#)
        // CouchDB's largest limit (its ?MAX_VIEW_LIMIT, 2^59 - 1).
        #expect(try fixture.query("by_k", [("limit", "576460752303423487")]).rows.count == 2)
        #expect(try fixture.query("by_k", [("skip", "576460752303423487")]).rows.isEmpty)
        #expect(try fixture.query("count", [("group_level", "576460752303423487")]).rows.map(\.keyJSON) == [#""before""#, "[1,2]"])
        #expect(try fixture.query("by_k", [("keys", "[" + Array(repeating: "1", count: 100_000).joined(separator: ",") + "]")]).rows.isEmpty)
    }
}
