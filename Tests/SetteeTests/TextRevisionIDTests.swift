import Foundation
import Testing
import Settee

/// Revision ids that are not 32 hex digits (`3-cc`, `1-foobar`): CouchDB
/// accepts any `N-string` and keeps it as its bytes (`couch_doc:parse_revid`),
/// showing 16-byte ids in hex (`revid_to_str`). The expected revision ids
/// below are CouchDB 3.5.0's for the same writes.
@Suite("Revision ids that are not hexadecimal")
struct TextRevisionIDTests {
    static func open(_ directory: TemporaryDirectory) throws -> Database {
        var options = Database.Options()
        options.keepsEarlierRevisions = true
        return try Database(at: directory.url.appendingPathComponent("db"), options: options)
    }

    @Test("parsing: text ids kept as their bytes, 32 characters must be hex, 16-byte text shown in hex as CouchDB shows it")
    func parsing() throws {
        let text = try #require(Revision("3-cc"))
        #expect(text.generation == 3 && text.hash == Array("cc".utf8) && text.description == "3-cc" && text.idText == "cc")
        #expect(Revision("1-foobar")?.description == "1-foobar")
        #expect(Revision("12-" + String(repeating: "Ab", count: 16))?.hash.count == 16)
        #expect(Revision("1-" + String(repeating: "z", count: 32)) == nil)
        for bad in ["1-", "-cc", "x-cc", "+1-cc", "1-a\"b", "1-a\\b", "1-a b", "1-" + String(repeating: "a", count: 201)] {
            #expect(Revision(bad) == nil, "\(bad)")
        }
        #expect(Revision("1-abcdefghijklmnop")?.description == "1-6162636465666768696a6b6c6d6e6f70")
    }

    @Test("replicated text ids: stored, read, edited (CouchDB's next revision id), conflicting, deleted, kept after edits, and after reopening")
    func storedAndEdited() throws {
        let directory = TemporaryDirectory()
        var db = try Self.open(directory)
        let written = try db.putReplicated([
            #"{"_id":"d","_rev":"3-cc","_revisions":{"start":3,"ids":["cc","bb","aa"]},"v":3}"#,
            #"{"_id":"e","_rev":"1-abcdefghijklmnop","v":1}"#,
        ])
        #expect(written.allSatisfy { (try? $0.get()) != nil })
        #expect(try db.document("d")?.json == #"{"_id":"d","_rev":"3-cc","v":3}"#)
        #expect(try db.document("e")?.revision.description == "1-6162636465666768696a6b6c6d6e6f70")
        #expect(try db.revisions(of: "d")?.history(of: Revision("3-cc")!).map(\.description) == ["3-cc", "2-bb", "1-aa"])

        // A normal edit on a text id: CouchDB's next revision id, and the history goes on.
        let edited = try db.put(#"{"_id":"d","_rev":"3-cc","v":4}"#)
        #expect(edited.revision.description == "4-077020dd301e5d14cb5f3e1d3e223271")
        #expect(try db.revisions(of: "d")?.history(of: edited.revision).map(\.idText) == ["077020dd301e5d14cb5f3e1d3e223271", "cc", "bb", "aa"])
        // The edited revision is kept until compaction.
        #expect(try db.document("d", revision: Revision("3-cc")!)?.json == #"{"_id":"d","_rev":"3-cc","v":3}"#)

        // A conflicting text leaf wins over the hex one (its bytes are greater, as in CouchDB).
        _ = try db.putReplicated([#"{"_id":"d","_rev":"4-zz","_revisions":{"start":4,"ids":["zz","cc"]},"w":1}"#])
        var revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.winner.revision.description == "4-zz")
        #expect(revisions.conflicts.map(\.description) == ["4-077020dd301e5d14cb5f3e1d3e223271"])
        #expect(revisions.history(of: Revision("4-zz")!).map(\.idText) == ["zz", "cc", "bb", "aa"])

        // A text id given as 16 bytes of text names the same revision.
        let deleted = try db.delete("e", revision: Revision("1-abcdefghijklmnop"))
        #expect(deleted.revision.description == "2-50ad17f6e9cb8d87a30fbe084fd9e59f")

        // Edits of a document whose path holds text ids, then all of it after reopening.
        let fifth = try db.put(#"{"_id":"d","_rev":"4-zz","w":2}"#)
        #expect(fifth.revision.description == "5-9332bdb0a54729955666225491cc37a9")
        let sixth = try db.put(#"{"_id":"d","_rev":"\#(fifth.revision)","w":3}"#)
        db = try Self.open(directory)
        revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.winner.revision == sixth.revision)
        #expect(revisions.history(of: sixth.revision).map(\.idText).suffix(4) == ["zz", "cc", "bb", "aa"])
        #expect(try db.document("d", revision: Revision("4-zz")!)?.value["w"] == 1)
        #expect(try db.verify().problems.isEmpty)
        #expect(try db.compact() > 0)
        #expect(try db.document("d", revision: Revision("4-zz")!) == nil)
    }

    @Test("a document without conflicts keeps a path of text ids through its edits, and its changes and views read its revision")
    func pathWithoutTree() throws {
        let directory = TemporaryDirectory()
        let db = try Self.open(directory)
        _ = try db.putReplicated([#"{"_id":"p","_rev":"2-second","_revisions":{"start":2,"ids":["second","first"]},"v":2}"#])
        var previous = try #require(Revision("2-second"))
        for value in 3...5 {
            previous = try db.put(#"{"_id":"p","_rev":"\#(previous)","v":\#(value)}"#).revision
        }
        let history = try #require(try db.revisions(of: "p")).history(of: previous).map(\.idText)
        #expect(history.count == 5 && history.suffix(2) == ["second", "first"])
        let fresh = try Database(at: directory.url.appendingPathComponent("db2"))
        _ = try fresh.putReplicated([#"{"_id":"q","_rev":"7-x","v":7}"#])
        #expect(try fresh.changes(since: 0).map(\.revision.description) == ["7-x"])
        #expect(try fresh.allDocuments(options: ViewQueryOptions(includeDocs: true)).rows.first?.documentJSON == #"{"_id":"q","_rev":"7-x","v":7}"#)
    }

    @Test("a revision of the highest generation Settee stores is refused an edit, not a trap: alone and in a tree")
    func highestGeneration() throws {
        let directory = TemporaryDirectory()
        let db = try Self.open(directory)
        let last = "\(UInt32.max)-aa"
        _ = try db.putReplicated([#"{"_id":"d","_rev":"\#(last)","v":1}"#])
        #expect(try db.document("d")?.revision.description == last)
        let alone = try #require(throws: DocumentError.self) { try db.put(#"{"_id":"d","_rev":"\#(last)","v":2}"#) }
        #expect(alone.reason.contains(last) && alone.reason.contains("generation"), "\(alone.reason)")
        #expect(throws: DocumentError.self) { try db.delete("d", revision: Revision(last)) }
        // A second leaf gives the document a tree; the highest one still cannot be extended.
        _ = try db.putReplicated([#"{"_id":"d","_rev":"1-bb","v":3}"#])
        #expect(try db.revisions(of: "d")?.leaves.count == 2)
        #expect(throws: DocumentError.self) { try db.put(#"{"_id":"d","_rev":"\#(last)","v":4}"#) }
        #expect(try db.put(#"{"_id":"d","_rev":"1-bb","v":5}"#).revision.generation == 2)
    }
}
