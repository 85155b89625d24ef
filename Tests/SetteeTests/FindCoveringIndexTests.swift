import Foundation
import Testing
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// People aged 20…31, half of them with a name; one without an age.
private func fillPeople(_ db: Database) throws {
    try db.write { batch in
        for n in 0..<12 {
            let name = n % 2 == 0 ? #", "name": {"first": "F\#(n)", "last": "L\#(11 - n)"}"# : ""
            try batch.put(#"{"_id": "p\#(String(format: "%02d", n))", "age": \#(20 + n), "city": "c\#(n % 3)"\#(name)}"#)
        }
        try batch.put(#"{"_id": "ageless", "city": "c0"}"#)
    }
}

private func request(_ json: String) throws -> FindRequest {
    try FindRequest(json: json)
}

@Suite("find answers from a JSON index's keys when the index covers the query (CouchDB's covering index)")
struct FindCoveringIndexTests {
    @Test("Fields and selector within the index: no document is read, and the results are those reading the documents gives")
    func coveredResultsEqualDocumentReads() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age", "city"]}, "ddoc": "ix", "name": "age-city"}"#))
        for (selector, fields) in [
            (#"{"age": {"$gt": 22}, "city": {"$exists": true}}"#, #"["_id", "age"]"#),
            (#"{"age": {"$gte": 20, "$lt": 29}, "city": "c1"}"#, #"["city", "_id", "age"]"#),
            (#"{"age": {"$gt": 20}, "city": {"$regex": "^c[02]$"}}"#, #"["city"]"#),
            (#"{"age": {"$lt": 26}, "city": {"$gt": null}, "$or": [{"city": "c2"}, {"age": 21}]}"#, #"["age", "city"]"#),
        ] {
            let covered = try db.find(request(#"{"selector": \#(selector), "fields": \#(fields), "execution_stats": true}"#))
            #expect(try db.explain(request(#"{"selector": \#(selector), "fields": \#(fields)}"#))["covering"] == true, "\(selector)")
            // "nothing" is in no document and not in the index: the documents are read.
            let withMissing = fields.replacingOccurrences(of: "]", with: #", "nothing"]"#)
            let read = try db.find(request(#"{"selector": \#(selector), "fields": \#(withMissing), "execution_stats": true}"#))
            #expect(covered.found == read.found, "\(selector)")
            #expect(!covered.found.isEmpty, "\(selector)")
            #expect(covered.bookmark == read.bookmark, "\(selector)")
            #expect(covered.executionStats?.totalDocsExamined == 0, "\(selector)")
            #expect(covered.executionStats?.totalKeysExamined == read.executionStats?.totalKeysExamined, "\(selector)")
            #expect(covered.executionStats?.resultsReturned == covered.found.count)
            #expect((read.executionStats?.totalDocsExamined ?? 0) > 0, "\(selector)")
        }
        // Members in the order the fields are asked for.
        let ordered = try db.find(request(#"{"selector": {"age": 25, "city": {"$gt": null}}, "fields": ["city", "_id", "age"]}"#))
        #expect(ordered.found.map(\.jsonText) == [#"{"city":"c2","_id":"p05","age":25}"#])
    }

    @Test("A nested column is rebuilt at its path; a covered read pages with bookmarks, sorted either way")
    func nestedFieldsAndPaging() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["name.last", "age"]}, "ddoc": "ix", "name": "last-age"}"#))
        let all = try db.find(request(#"{"selector": {"name.last": {"$gt": null}, "age": {"$gt": 0}}, "fields": ["_id", "name.last"], "execution_stats": true}"#))
        #expect(all.executionStats?.totalDocsExamined == 0)
        #expect(all.found.first?.jsonText == #"{"_id":"p10","name":{"last":"L1"}}"#)
        #expect(all.found.count == 6)
        for sort in [#"[{"name.last": "asc"}]"#, #"[{"name.last": "desc"}]"#] {
            let whole = try db.find(request(#"{"selector": {"name.last": {"$gt": null}, "age": {"$gt": 0}}, "fields": ["name.last", "age"], "sort": \#(sort)}"#))
            var paged: [FoundDocument] = []
            var bookmark: String?
            repeat {
                var page = try request(#"{"selector": {"name.last": {"$gt": null}, "age": {"$gt": 0}}, "fields": ["name.last", "age"], "sort": \#(sort), "limit": 4}"#)
                page.bookmark = bookmark
                let result = try db.find(page)
                paged += result.found
                bookmark = result.found.isEmpty ? nil : result.bookmark
            } while bookmark != nil
            #expect(paged == whole.found, "\(sort)")
            #expect(whole.found.count == 6)
        }
    }

    @Test("A change to a document shows in the next covered read, as in a read of the documents")
    func followsWrites() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "ix", "name": "age"}"#))
        let query = try request(#"{"selector": {"age": {"$gte": 30}}, "fields": ["_id", "age"]}"#)
        #expect(try db.find(query).documents == [["_id": "p10", "age": 30], ["_id": "p11", "age": 31]])
        let stored = try #require(try db.document("p10"))
        _ = try db.put(#"{"_id": "p10", "_rev": "\#(stored.revision)", "age": 40}"#)
        _ = try db.delete("p11")
        #expect(try db.find(query).documents == [["_id": "p10", "age": 40]])
    }
}

@Suite("find's execution statistics count as CouchDB's do")
struct FindExecutionStatsFidelityTests {
    @Test("With a limit, the read goes on to the next match, as CouchDB's does: its key and document are counted")
    func limitCountsTheNextMatch() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "ix", "name": "age"}"#))
        let limited = try db.find(request(#"{"selector": {"age": {"$lte": 42}}, "fields": ["_id", "city"], "limit": 3, "execution_stats": true}"#))
        #expect(limited.found.count == 3)
        #expect(limited.executionStats?.totalKeysExamined == 4)
        #expect(limited.executionStats?.totalDocsExamined == 4)
        #expect(limited.executionStats?.resultsReturned == 3)
        // The page and its bookmark are those of a read without statistics.
        let plain = try db.find(request(#"{"selector": {"age": {"$lte": 42}}, "fields": ["_id", "city"], "limit": 3}"#))
        #expect(plain.found == limited.found)
        #expect(plain.bookmark == limited.bookmark)
        // Only matches end the read: the rows that do not match before the next one are counted too.
        let sparse = try db.find(request(#"{"selector": {"age": {"$gte": 20}, "city": "c0"}, "fields": ["_id"], "limit": 2, "skip": 1, "execution_stats": true}"#))
        #expect(sparse.documents == [["_id": "p03"], ["_id": "p06"]])
        #expect(sparse.executionStats?.totalKeysExamined == 10, "p00…p09: p09 is the match after the page")
        // No match after the page: every key is read.
        let last = try db.find(request(#"{"selector": {"age": {"$gte": 29}}, "fields": ["_id", "city"], "limit": 3, "execution_stats": true}"#))
        #expect(last.found.count == 3)
        #expect(last.executionStats?.totalKeysExamined == 3)
        // Covered: keys counted the same way, no document.
        let covered = try db.find(request(#"{"selector": {"age": {"$lte": 42}}, "fields": ["_id", "age"], "limit": 3, "execution_stats": true}"#))
        #expect(covered.executionStats?.totalKeysExamined == 4)
        #expect(covered.executionStats?.totalDocsExamined == 0)
    }

    @Test("A scan of _all_docs counts the design documents it passes, as CouchDB's does; with a limit it stops at the next match")
    func allDocsCountsDesignDocuments() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "ix", "name": "age"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["city"]}, "ddoc": "iy", "name": "city"}"#))
        let none = try db.find(request(#"{"selector": {"foo": "bar"}, "execution_stats": true}"#))
        #expect(none.found.isEmpty)
        #expect(none.executionStats?.totalKeysExamined == 15, "13 documents and 2 design documents")
        #expect(none.executionStats?.totalDocsExamined == 15)
        let limited = try db.find(request(#"{"selector": {"_id": {"$gt": null}}, "limit": 2, "execution_stats": true}"#))
        #expect(limited.documents.map { $0["_id"] } == ["ageless", "p00"])
        #expect(limited.executionStats?.totalKeysExamined == 5, "_design/ix, _design/iy, ageless, p00, then p01")
    }

    @Test("r above 1 counts the documents as quorum reads, as CouchDB does; a covered read reads none")
    func quorumReads() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "ix", "name": "age"}"#))
        let quorum = try db.find(request(#"{"selector": {"age": {"$lte": 22}}, "r": 3, "execution_stats": true}"#))
        #expect(quorum.found.count == 3)
        #expect(quorum.executionStats?.totalKeysExamined == 3)
        #expect(quorum.executionStats?.totalDocsExamined == 0)
        #expect(quorum.executionStats?.totalQuorumDocsExamined == 3)
        let covered = try db.find(request(#"{"selector": {"age": {"$lt": 23}}, "fields": ["age"], "r": 3, "execution_stats": true}"#))
        #expect(covered.executionStats?.totalQuorumDocsExamined == 0)
        #expect(covered.executionStats?.totalDocsExamined == 0)
        let scan = try db.find(request(#"{"selector": {"city": "c1"}, "r": 2, "execution_stats": true}"#))
        #expect(scan.executionStats?.totalQuorumDocsExamined == 13, "the documents, not the design document")
        #expect(scan.executionStats?.totalKeysExamined == 14)
        #expect(scan.executionStats?.totalDocsExamined == 0)
        #expect(try db.explain(request(#"{"selector": {"age": 1}, "r": 3}"#))["opts"]?["r"] == 3)
    }
}

@Suite("find and explain: requests no index serves, and $mod's integers")
struct FindRequestFidelityTests {
    @Test("explain of a sort no index serves answers with no index and the candidates; find refuses it")
    func explainWithoutUsableIndex() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        let query = try request(#"{"selector": {"age": 23}, "sort": ["company"]}"#)
        let explained = try db.explain(query)
        #expect(explained["index"] == .null)
        #expect(explained["mrargs"] == nil)
        #expect(explained["covering"] == nil)
        #expect(explained["selector"] == ["age": ["$eq": 23]])
        #expect(explained["index_candidates"] == [[
            "index": ["ddoc": .null, "name": "_all_docs", "type": "special", "def": ["fields": [["_id": "asc"]]]],
            "analysis": ["usable": false, "reasons": [["name": "field_mismatch"]], "ranking": 1, "covering": .null],
        ]])
        #expect(mangoError { _ = try db.find(query) }?.error == "no_usable_index")
        // With an index that cannot serve it either, both are candidates; a partial one ranks after them.
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "ix", "name": "age"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"], "partial_filter_selector": {"city": "c1"}}, "ddoc": "iz", "name": "partial"}"#))
        let two = try db.explain(query)
        let analyses = (two["index_candidates"]?.arrayValue ?? []).map { [$0["index"]?["name"], $0["analysis"]?["reasons"]?[0]?["name"], $0["analysis"]?["ranking"]] }
        #expect(analyses == [["partial", "is_partial", 2], ["age", "sort_order_mismatch", 1], ["_all_docs", "field_mismatch", 1]])
        // No fallback: refused as CouchDB refuses it.
        let strict = try request(#"{"selector": {"age": 23}, "sort": ["company"], "allow_fallback": false}"#)
        #expect(mangoError { _ = try db.explain(strict) }?.error == "invalid_index")
    }

    @Test("$mod takes integers as written: 5.0 or 1e1 is refused as CouchDB refuses a float")
    func modFloats() throws {
        for selector in [#"{"a": {"$mod": [5.0, 1]}}"#, #"{"a": {"$mod": [5, 1.0]}}"#, #"{"$and": [{"a": {"$mod" : [ 1e1 , 0 ]}}]}"#] {
            let error = mangoError { _ = try FindRequest(json: #"{"selector": \#(selector)}"#) }
            #expect(error?.error == "bad_arg", "\(selector)")
        }
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {"a": {"$mod": [5.0, 1]}}}"#) }?.reason == "Bad argument for operator $mod: [5.0,1]")
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try fillPeople(db)
        let found = try db.find(request(#"{"selector": {"age": {"$mod": [5, 1]}, "note": "\"$mod\": [5.0, 1]"}}"#))
        #expect(found.found.isEmpty, "a $mod with integers, and the text in a string value, are not refused")
        #expect(try db.find(request(#"{"selector": {"age": {"$mod": [5, 1]}}}"#)).documents.map { $0["_id"] } == ["p01", "p06", "p11"])
    }
}
