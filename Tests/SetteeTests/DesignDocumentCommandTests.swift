import Foundation
import Testing
import Settee

@Suite("settee design list, show and delete", .ownThread)
struct DesignDocumentCommandTests {
    @Test("design list shows each design document with its views; show prints it as stored; delete removes it and its views")
    func listShowDelete() throws {
        let fixture = try CommandLineFixture()
        let list = try fixture.run(["--db", fixture.db, "design", "list"])
        #expect(list.exitStatus == 0, "\(list.standardError)")
        let listed = try JSONValue(parsing: list.standardOutput)["design_documents"]?.arrayValue ?? []
        #expect(listed.count == 1, "\(list.standardOutput)")
        #expect(listed.first?["id"] == "_design/numbers")
        #expect(listed.first?["views"] == ["by_n", "count"])
        #expect(listed.first?["language"] == "javascript")
        let rev = try #require(listed.first?["rev"]?.stringValue)

        let shown = try fixture.run(["--db", fixture.db, "design", "show", "numbers"])
        #expect(shown.exitStatus == 0, "\(shown.standardError)")
        #expect(shown.standardOutput == (try fixture.run(["--db", fixture.db, "get", "_design/numbers"])).standardOutput)
        #expect(try fixture.run(["--db", fixture.db, "design", "show", "_design/numbers"]).standardOutput == shown.standardOutput)

        let deleted = try fixture.run(["--db", fixture.db, "design", "delete", "numbers", "--rev", rev])
        #expect(deleted.exitStatus == 0, "\(deleted.standardError)")
        #expect(try JSONValue(parsing: deleted.standardOutput)["ok"] == true)
        #expect(try JSONValue(parsing: fixture.run(["--db", fixture.db, "design", "list"]).standardOutput) == ["design_documents": []])
        let gone = try fixture.run(["--db", fixture.db, "design", "show", "numbers"])
        #expect(gone.exitStatus == 1)
        #expect(try JSONValue(parsing: gone.standardError) == ["error": "not_found", "reason": "deleted", "id": "_design/numbers"])
        let query = try fixture.run(["--db", fixture.db, "query", "numbers/by_n"])
        #expect(query.exitStatus == 1)
        #expect(try JSONValue(parsing: query.standardError)["error"] == "not_found")
        let again = try fixture.run(["--db", fixture.db, "design", "delete", "numbers"])
        #expect(again.exitStatus == 1)
        #expect(try JSONValue(parsing: again.standardError)["error"] == "not_found", "\(again.standardError)")
    }

    @Test("design list names a stored design document it cannot read instead of failing")
    func listUnreadable() throws {
        let fixture = try CommandLineFixture(documents: 0)
        // A design document is checked when written, unless it is in another language (stored as
        // CouchDB stores one for a query server it lacks): such a one is what Settee cannot read.
        let put = try fixture.run(["--db", fixture.db, "put", #"{"_id":"_design/odd","language":"python","views":{"v":{"map":"def f(doc): pass"}}}"#])
        #expect(put.exitStatus == 0, "\(put.standardError)")
        let list = try fixture.run(["--db", fixture.db, "design", "list"])
        #expect(list.exitStatus == 0, "\(list.standardError)")
        let listed = try JSONValue(parsing: list.standardOutput)["design_documents"]?.arrayValue ?? []
        #expect(listed.map { $0["id"] } == ["_design/numbers", "_design/odd"], "\(list.standardOutput)")
        #expect(listed.last?["error"]?["error"] == "invalid_design_document", "\(list.standardOutput)")
    }
}
