import Foundation
import Testing
import Settee

/// CouchDB's bookmark built by hand, as `mango_json_bookmark:create/1` makes
/// it: `term_to_binary([{startkey_docid, Id}, {startkey, Key}], [compressed,
/// {minor_version, 1}])` (small enough to stay uncompressed), in base64url
/// without padding. `keyTerm` is the key's term.
private func couchBookmark(id: String, keyTerm: [UInt8]) -> String {
    func atom(_ name: String) -> [UInt8] { [100, 0, UInt8(name.utf8.count)] + Array(name.utf8) }
    let term: [UInt8] = [131, 108, 0, 0, 0, 2, 104, 2] + atom("startkey_docid") + binaryTerm(id) + [104, 2] + atom("startkey") + keyTerm + [106]
    return base64URL(term)
}

/// A binary's term (`BINARY_EXT`): a string as jiffy decodes it.
private func binaryTerm(_ text: String) -> [UInt8] {
    let bytes = Array(text.utf8)
    return [109, 0, 0, UInt8(bytes.count >> 8), UInt8(bytes.count & 255)] + bytes
}

private func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

private func ids(_ result: FindResult) -> [String] {
    result.documents.compactMap { $0["_id"]?.stringValue }
}

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

@Suite("find bookmarks in CouchDB's form")
struct FindBookmarkTests {
    /// p00…p19 with n = 0, 20, … 380 (integers below 256 and above).
    private func numbered(_ db: Database) throws {
        try db.write { batch in
            for index in 0..<20 { try batch.put(#"{"_id": "p\#(String(format: "%02d", index))", "n": \#(index * 20)}"#) }
        }
        try db.createIndex(ValueIndex("n"), name: "n")
    }

    @Test("A JSON index's bookmark is CouchDB's term of the last row's key and id, byte for byte: [80] is a string of bytes to Erlang, [280] a list")
    func jsonIndexBookmarks() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try numbered(db)
        var request = try FindRequest(json: #"{"selector": {"n": {"$gte": 0}}, "sort": ["n"], "limit": 5}"#)
        let first = try db.find(request)
        #expect(ids(first) == ["p00", "p01", "p02", "p03", "p04"])
        #expect(first.bookmark == couchBookmark(id: "p04", keyTerm: [107, 0, 1, 80]), "[80]: STRING_EXT")
        request.bookmark = first.bookmark
        let second = try db.find(request)
        #expect(ids(second) == ["p05", "p06", "p07", "p08", "p09"])
        #expect(second.bookmark == couchBookmark(id: "p09", keyTerm: [107, 0, 1, 180]))
        request.bookmark = second.bookmark
        let third = try db.find(request)
        #expect(ids(third) == ["p10", "p11", "p12", "p13", "p14"])
        #expect(third.bookmark == couchBookmark(id: "p14", keyTerm: [108, 0, 0, 0, 1, 98, 0, 0, 1, 24, 106]), "[280]: a list of one INTEGER_EXT")
        // A bookmark CouchDB handed out resumes here.
        request.bookmark = couchBookmark(id: "p12", keyTerm: [107, 0, 1, 240])
        #expect(ids(try db.find(request)) == ["p13", "p14", "p15", "p16", "p17"])
        request.bookmark = couchBookmark(id: "p16", keyTerm: [108, 0, 0, 0, 1, 98, 0, 0, 1, 64, 106])
        #expect(ids(try db.find(request)) == ["p17", "p18", "p19"])
        // The key as a float (NEW_FLOAT_EXT), which collates as the integer.
        var float: [UInt8] = [108, 0, 0, 0, 1, 70]
        withUnsafeBytes(of: (240.0).bitPattern.bigEndian) { float += $0 }
        request.bookmark = couchBookmark(id: "p12", keyTerm: float + [106])
        #expect(ids(try db.find(request)) == ["p13", "p14", "p15", "p16", "p17"])
    }

    @Test("A scan's bookmark keys the last document by its id, as _all_docs does; the bookmark Settee wrote before ([key, id] as JSON) still resumes")
    func allDocsAndOldBookmarks() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try numbered(db)
        var request = try FindRequest(json: #"{"selector": {"_id": {"$gt": "p"}}, "limit": 3}"#)
        let first = try db.find(request)
        #expect(ids(first) == ["p00", "p01", "p02"])
        #expect(first.bookmark == couchBookmark(id: "p02", keyTerm: binaryTerm("p02")))
        request.bookmark = base64URL(Array(#"["p05","p05"]"#.utf8))
        #expect(ids(try db.find(request)) == ["p06", "p07", "p08"], "Settee's earlier form")
        var indexed = try FindRequest(json: #"{"selector": {"n": {"$gt": 10}}, "sort": ["n"], "limit": 2}"#)
        indexed.bookmark = base64URL(Array(#"[[100],"p05"]"#.utf8))
        #expect(ids(try db.find(indexed)) == ["p06", "p07"])
    }

    @Test("A compressed bookmark (a long key: Erlang's term_to_binary compressed it with zlib) resumes too")
    func compressedBookmark() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let long = String(repeating: "x", count: 300)
        try db.write { batch in
            for index in 0..<10 { try batch.put(#"{"_id": "d0\#(index)", "s": "\#(long)0\#(index)"}"#) }
        }
        try db.createIndex(ValueIndex("s"), name: "s")
        var request = try FindRequest(json: #"{"selector": {"s": {"$gt": null}}, "sort": ["s"], "limit": 5}"#)
        // [{startkey_docid, <<"d07">>}, {startkey, [<<"x…x07">>]}], compressed (tag 80) at zlib's default level.
        request.bookmark = "g1AAAAFneJzLYWBgYMpgSmHgKy5JLCrJTq2MT8lPzkzJBYozpxiYg6Q4YFI5QEFGoAyjXsUoIBoYmGdlAQC-d5uQ"
        #expect(ids(try db.find(request)) == ["d08", "d09"])
        request.bookmark = nil
        request.limit = 7
        let page = try db.find(request)
        #expect(ids(page).last == "d06")
        #expect(page.bookmark == couchBookmark(id: "d06", keyTerm: [108, 0, 0, 0, 1] + binaryTerm(long + "06") + [106]),
                "Settee leaves it uncompressed, which CouchDB reads as well")
        request.bookmark = page.bookmark
        #expect(ids(try db.find(request)) == ["d07", "d08", "d09"])
    }

    @Test("A bookmark that is no such term, or a term without startkey and startkey_docid, is invalid_bookmark")
    func invalidBookmarks() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try numbered(db)
        func atom(_ name: String) -> [UInt8] { [100, 0, UInt8(name.utf8.count)] + Array(name.utf8) }
        let withoutID = base64URL([131, 108, 0, 0, 0, 1, 104, 2] + atom("startkey") + [97, 1, 106])
        let truncated = String(couchBookmark(id: "p01", keyTerm: [107, 0, 1, 20]).dropLast(6))
        for bookmark in [withoutID, truncated, base64URL([131, 97, 1]), "!!"] {
            var request = try FindRequest(json: #"{"selector": {"n": {"$gt": 0}}}"#)
            request.bookmark = bookmark
            #expect(mangoError { _ = try db.find(request) }
                    == MangoError(error: "invalid_bookmark", reason: "Invalid bookmark value: \(JSONValue.string(bookmark).jsonText)"), "\(bookmark)")
        }
    }
}
