import Foundation
import Testing
import Settee

/// `settee serve` answering `_find`, `_explain`, `_index` and query design
/// documents as CouchDB 3.5's `mango_httpd` and `couch_mrview` answer them.
@Suite("settee serve: Mango requests CouchDB refuses or answers in its own way")
struct ServerMangoFidelityTests {
    @Test("_find, _explain, _index and _index/_bulk_delete POSTs need Content-Type application/json: 415 bad_content_type")
    func contentType() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let find = Data(#"{"selector": {"a": 1}}"#.utf8)
        for path in ["/db/_find", "/db/_explain", "/db/_index", "/db/_index/_bulk_delete"] {
            let plain = try await server.request("POST", path, body: find, headers: ["Content-Type": "text/plain"])
            #expect(plain.status == 415, "\(path)")
            #expect(plain.json == ["error": "bad_content_type", "reason": "Content-Type must be application/json"], "\(path)")
            let none = try await server.request("POST", path)
            #expect(none.status == 415, "\(path) without a body or Content-Type")
        }
        let charset = try await server.request("POST", "/db/_find", body: find, headers: ["Content-Type": "application/json; charset=utf-8"])
        #expect(charset.status == 200)
        #expect(try await server.request("POST", "/db/_explain", body: find).status == 200)
        await server.stop()
    }

    @Test("_explain of a sort no index serves is 200 with \"index\": null and the candidates; _find keeps no_usable_index")
    func explainWithoutUsableIndex() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        _ = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [["age": 23, "company": "x"]]])
        let query: JSONValue = ["selector": ["age": 23], "sort": ["company"]]
        let explained = try await server.request("POST", "/db/_explain", json: query)
        #expect(explained.status == 200)
        #expect(explained.json["index"] == .null)
        #expect(explained.json["partitioned"] == false)
        #expect(explained.json["index_candidates"] == [[
            "index": ["ddoc": .null, "name": "_all_docs", "type": "special", "def": ["fields": [["_id": "asc"]]]],
            "analysis": ["usable": false, "reasons": [["name": "field_mismatch"]], "ranking": 1, "covering": .null],
        ]])
        let found = try await server.request("POST", "/db/_find", json: query)
        #expect(found.status == 400)
        #expect(found.json["error"] == "no_usable_index")
        await server.stop()
    }

    @Test("A query design document whose view maps with JavaScript is refused in _bulk_docs and PUT, as couch_mrview refuses it")
    func queryDesignDocumentWithJavaScriptMap() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let bad: JSONValue = [
            "_id": "_design/bad_view_index", "language": "query",
            "views": ["views001": ["map": "function(employee){if(employee.training){emit(employee.number, employee.training);}}"]],
        ]
        let bulk = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [bad]])
        #expect(bulk.status == 201)
        let row = bulk.json[0]
        #expect(row?["id"] == "_design/bad_view_index")
        #expect(row?["rev"] == nil)
        #expect(row?["error"] == "invalid_design_doc")
        #expect(row?["reason"] == "`views.views001.map` field must have object type")
        let put = try await server.request("PUT", "/db/_design/bad_view_index", json: bad)
        #expect(put.status == 400)
        #expect(put.json == ["error": "invalid_design_doc", "reason": "`views.views001.map` field must have object type"])
        #expect(try await server.request("GET", "/db/_design/bad_view_index").status == 404)
        // A view without a map, and a reduce that is not a string, are refused too.
        let noMap: JSONValue = ["language": "query", "views": ["v": ["reduce": "_count"]]]
        #expect(try await server.request("PUT", "/db/_design/nomap", json: noMap).json["reason"] == "View `v` must contain map function")
        let numberReduce: JSONValue = ["language": "query", "views": ["v": ["map": ["fields": ["a": "asc"]], "reduce": 1]]]
        #expect(try await server.request("PUT", "/db/_design/reduce", json: numberReduce).json["reason"] == "`views.v.reduce` field must have string type")
        // A Mango index's design document, written by hand, is stored and used.
        let good: JSONValue = [
            "language": "query",
            "views": ["queryidx1": ["map": ["fields": ["age": "asc"], "partial_filter_selector": [:]], "reduce": "_count",
                                    "options": ["def": ["fields": [["age": "asc"]]], "w": 2]]],
        ]
        #expect(try await server.request("PUT", "/db/_design/good", json: good).status == 201)
        let explained = try await server.request("POST", "/db/_explain", json: ["selector": ["age": ["$gt": 1]]])
        #expect(explained.json["index"]?["ddoc"] == "_design/good")
        await server.stop()
    }

    @Test("$mod with 5.0 as divisor or remainder is refused with bad_arg, as CouchDB reads 5.0 as a float")
    func modFloat() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        for path in ["/db/_find", "/db/_explain"] {
            let refused = try await server.request("POST", path, body: Data(#"{"selector": {"n": {"$mod": [5.0, 1]}}}"#.utf8))
            #expect(refused.status == 400, "\(path)")
            #expect(refused.json == ["error": "bad_arg", "reason": "Bad argument for operator $mod: [5.0,1]"], "\(path)")
            let integers = try await server.request("POST", path, body: Data(#"{"selector": {"n": {"$mod": [5, 1]}}}"#.utf8))
            #expect(integers.status == 200, "\(path)")
        }
        await server.stop()
    }
}
