import Foundation
import Testing
import Settee

@Suite("missing_named_view names the view and the nearest views")
struct MissingNamedViewTests {
    // CouchDB: throw({not_found, missing_named_view}) in extract_view/4,
    // src/couch_mrview/src/couch_mrview_util.erl; its reason is kept word for word.
    @Test("A misspelt view: not_found, missing_named_view, with the view asked for and the nearest names")
    func suggestions() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(#"""
            {"_id": "_design/people", "views": {
              "by_name": {"map": "function (doc) { emit(doc.name, null); }"},
              "by_age": {"map": "function (doc) { emit(doc.age, null); }"},
              "count": {"map": "function (doc) { emit(null, 1); }", "reduce": "_count"}}}
            """#)
        let error = try #require(throws: DocumentError.self) { try db.query("people/by_nmae") }
        #expect(error.code == .notFound)
        #expect(error.reason == "missing_named_view")
        #expect(error.id == "_design/people")
        #expect(error.view == "by_nmae")
        #expect(error.suggestions == ["by_name", "by_age", "count"])
        #expect(error.description == #"not_found: missing_named_view (document "_design/people"): no view "by_nmae"; did you mean "by_name", "by_age", "count"?"#)
        #expect(try #require(throws: DocumentError.self) { try db.query("people/COUNT") }.suggestions.first == "count")
    }

    @Test("settee query prints the view and the suggestions with CouchDB's error and reason")
    func commandLine() throws {
        let fixture = try CommandLineFixture(documents: 0)
        let outcome = try fixture.run(["--db", fixture.db, "query", "numbers/by_m"])
        #expect(outcome.exitStatus == 1)
        let report = try JSONValue(parsing: outcome.standardError)
        #expect(report == ["error": "not_found", "reason": "missing_named_view", "id": "_design/numbers", "view": "by_m",
                           "suggestions": ["by_n", "count"]], "\(outcome.standardError)")
    }
}
