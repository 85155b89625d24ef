import Foundation
import Testing
import Settee

/// Documents with 0 to 5 `tags` (small numbers and letters) and `phones` ({type, n}).
private func unnestDocuments(count: Int, seed: UInt64) -> [JSONValue] {
    var random = SplitMix64(seed: seed)
    func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
    let values: [JSONValue] = [1, 2, 3, 4, 5, "a", "b", "c"]
    let types: [JSONValue] = ["home", "work", "mobile"]
    return (0..<count).map { index in
        .object([
            ("_id", .string(String(format: "u%03d", index))),
            ("n", .number(Double(pick(10)))),
            ("tags", .array((0..<pick(6)).map { _ in values[pick(values.count)] })),
            ("phones", .array((0..<pick(4)).map { _ in ["type": types[pick(types.count)], "n": .number(Double(pick(50)))] })),
        ])
    }
}

private func described(_ elements: [UnnestedElement]) -> [String] {
    elements.map { "\($0.documentID)#\($0.position) \($0.element.jsonText)" }
}

/// Every element of `request`, `limit` at a time, by bookmark; and whether a page ended inside a document.
private func paged(_ db: Database, _ request: UnnestRequest, limit: Int) throws -> (elements: [String], straddled: Bool) {
    var request = request
    request.limit = limit
    var found: [String] = []
    var straddled = false
    for _ in 0..<1000 {
        let page = try db.findElements(request)
        if page.elements.isEmpty {
            #expect(page.bookmark == request.bookmark ?? "nil", "an empty page hands back the bookmark it was given")
            break
        }
        found += described(page.elements)
        request.bookmark = page.bookmark
        // Did the next element come from the same document?
        var peek = request
        peek.limit = 1
        if let next = try db.findElements(peek).elements.first, next.documentID == page.elements.last?.documentID { straddled = true }
    }
    return (found, straddled)
}

/// The elements of `settee unnest`'s output, as `id#position element`.
private func printed(_ output: JSONValue) -> [String] {
    (output["elements"]?.arrayValue ?? []).map { element in
        let id = element["id"]?.stringValue ?? "?"
        let position = element["position"]?.jsonText ?? "?"
        return "\(id)#\(position) \(element["element"]?.jsonText ?? "?")"
    }
}

@Suite("UNNEST pages by bookmark, element by element; settee unnest", .ownThread)
struct UnnestPagingTests {
    static let requests: [UnnestRequest] = [
        UnnestRequest(path: "tags"),
        UnnestRequest(path: "tags", elementSelector: ["$gt": 2]),
        UnnestRequest(path: "tags", elementSelector: ["$in": [1, "a", "c"]], parentSelector: ["n": ["$lt": 7]]),
        UnnestRequest(path: "phones", elementSelector: ["type": "home"]),
        UnnestRequest(path: "phones", elementSelector: ["type": ["$gte": "mobile"], "n": ["$lt": 30]]),
    ]

    @Test("Pages of any size, by bookmark, give every element once, in order, from a scan or the array index; a page may end inside a document")
    func pages() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let documents = unnestDocuments(count: 150, seed: 42)
        try db.write { batch in
            for document in documents { try batch.put(document.jsonText) }
        }
        for stage in ["scan", "index"] {
            if stage == "index" {
                try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
                try db.createIndex(ArrayIndex(path: "phones", expressions: ["type"]), name: "phones")
            }
            for request in Self.requests {
                let all = try db.findElements(request)
                #expect(all.index.type == (stage == "index" ? "array" : "special"),
                        "\(stage) \(request.path) \(request.elementSelector.jsonText)")
                let expected = described(all.elements)
                #expect(expected.count > 20)
                for limit in [1, 3, 7] {
                    let (found, straddled) = try paged(db, request, limit: limit)
                    #expect(found == expected, "\(stage) \(request.path) \(request.elementSelector.jsonText) by \(limit)")
                    if limit == 1 { #expect(straddled, "\(stage) \(request.path): some page ended inside a document") }
                }
                // skip counts elements after the bookmark's.
                var page = request
                page.limit = 4
                let first = try db.findElements(page)
                page.bookmark = first.bookmark
                page.skip = 2
                #expect(described(try db.findElements(page).elements) == Array(expected.dropFirst(6).prefix(4)), "\(stage) skip after a bookmark")
            }
        }
        // A bookmark of an element whose document is gone resumes with the next document.
        var request = UnnestRequest(path: "tags", limit: 1)
        let first = try db.findElements(request)
        let gone = try #require(first.elements.first)
        try db.delete(gone.documentID, revision: try #require(try db.document(gone.documentID)).revision)
        request.bookmark = first.bookmark
        request.limit = nil
        let rest = try db.findElements(request)
        #expect(rest.elements.first?.documentID != gone.documentID)
        #expect(described(rest.elements) == described(try db.findElements(UnnestRequest(path: "tags")).elements))
        // A find bookmark (its key is no position), or garbage, is refused.
        let findBookmark = try db.find(try FindRequest(json: #"{"selector": {"n": {"$gt": 0}}, "limit": 1}"#)).bookmark
        for bookmark in [findBookmark, "garbage!"] {
            request.bookmark = bookmark
            #expect(mangoError { _ = try db.findElements(request) }
                    == MangoError(error: "invalid_bookmark", reason: "Invalid bookmark value: \(JSONValue.string(bookmark).jsonText)"))
        }
    }

    @Test("An UNNEST request as JSON: path, element, selector, limit, skip, bookmark; what it refuses")
    func requestJSON() throws {
        let request = try UnnestRequest(json: #"{"path": "contacts[].phones", "element": {"type": "home"}, "selector": {"n": 1}, "limit": 3, "skip": 1, "bookmark": "abc", "update": false, "execution_stats": true}"#)
        #expect(request.path == "contacts[].phones")
        #expect(request.elementSelector == ["type": "home"])
        #expect(request.parentSelector == ["n": 1])
        #expect(request.limit == 3)
        #expect(request.skip == 1)
        #expect(request.bookmark == "abc")
        #expect(request.update == false)
        let bare = try UnnestRequest(json: #"{"path": "tags"}"#)
        #expect(bare.limit == nil && bare.elementSelector == [:] && bare.parentSelector == [:] && bare.bookmark == nil)
        #expect(mangoError { _ = try UnnestRequest(json: #"{"element": {}}"#) } == MangoError(error: "missing_required_key", reason: "Missing required key: path"))
        #expect(mangoError { _ = try UnnestRequest(json: #"{"path": "tags", "sort": ["n"]}"#) } == MangoError(error: "invalid_key", reason: "Invalid key sort for this request."))
        #expect(mangoError { _ = try UnnestRequest(json: #"{"path": "tags", "limit": -1}"#) }?.error == "invalid_non_neg_integer")
        #expect(mangoError { _ = try UnnestRequest(json: #"{"path": "tags", "element": [1]}"#) }?.error == "invalid_selector_json")
        #expect(mangoError { _ = try UnnestRequest(json: #"{"path": "tags", "element": {"$mod": [2.0, 1]}}"#) }?.error == "bad_arg")
    }

    @Test("settee unnest prints the elements with their documents and a bookmark that pages on; reads standard input; reports errors as JSON")
    func command() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        for document in [#"{"_id":"a","tags":[3,1,4]}"#, #"{"_id":"b","tags":[1,5]}"#, #"{"_id":"c","tags":"none"}"#] {
            #expect(try settee.run(["--db", db, "put", document], in: directory.url).exitStatus == 0)
        }
        let first = try settee.run(["--db", db, "unnest", #"{"path": "tags", "element": {"$lt": 5}, "limit": 2, "execution_stats": true}"#], in: directory.url)
        #expect(first.exitStatus == 0, "\(first.standardError)")
        let page = try JSONValue(parsing: first.standardOutput)
        #expect(printed(page) == ["a#0 3", "a#1 1"])
        #expect(page["elements"]?[0]?["doc"]?["tags"] == [3, 1, 4])
        #expect(page["index"]?["name"] == "_all_docs")
        #expect(page["execution_stats"]?["results_returned"] == 2)
        let bookmark = try #require(page["bookmark"]?.stringValue)

        let body = directory.url.appendingPathComponent("body.json")
        try Data(#"{"path": "tags", "element": {"$lt": 5}, "bookmark": "\#(bookmark)"}"#.utf8).write(to: body)
        let second = try settee.run(["--db", db, "unnest", "-"], input: body, in: directory.url)
        #expect(second.exitStatus == 0, "\(second.standardError)")
        let rest = try JSONValue(parsing: second.standardOutput)
        #expect(printed(rest) == ["a#2 4", "b#0 1"])
        #expect(rest["execution_stats"] == nil)

        let bad = try settee.run(["--db", db, "unnest", #"{"path": "tags", "element": {"$foo": 1}}"#], in: directory.url)
        #expect(bad.exitStatus == 1)
        #expect(try JSONValue(parsing: bad.standardError) == ["error": "invalid_operator", "reason": "Invalid operator: $foo"])
    }
}
