import Testing
import SetteeFind
import Settee
import Foundation

private func selector(_ text: String) throws -> MangoSelector {
    try MangoSelector(try JSONValue(parsing: text))
}

private func normalized(_ text: String) throws -> String {
    try selector(text).normalized.jsonText
}

/// Whether the document matches; matching the parsed document and matching
/// its text (only the fields named parsed) must agree.
private func matches(_ selectorText: String, _ documentText: String) throws -> Bool {
    let compiled = try selector(selectorText)
    let parsed = compiled.matches(try JSONValue(parsing: documentText))
    var text = documentText
    let onText = try text.withUTF8 { try compiled.matches(json: UnsafeRawBufferPointer($0)) }
    #expect(parsed == onText, "matching the text of \(documentText) disagrees with matching its value")
    return parsed
}

private func mangoError(_ text: String) -> MangoError? {
    mangoError { _ = try selector(text) }
}

@Suite("Mango selectors: CouchDB's normalization, errors and matching")
struct MangoSelectorTests {
    @Test("Normalization makes operators explicit and pushes fields and negations down, as CouchDB does")
    func normalization() throws {
        #expect(try normalized(#"{"a": 1}"#) == #"{"a":{"$eq":1}}"#)
        #expect(try normalized(#"{"a": {"b": {"$gt": 10}}}"#) == #"{"a.b":{"$gt":10}}"#)
        #expect(try normalized(#"{"a": 1, "b": 2}"#) == #"{"$and":[{"a":{"$eq":1}},{"b":{"$eq":2}}]}"#)
        #expect(try normalized(#"{"foo": {"$and": [{"$gt": 5}, {"$lt": 10}]}}"#)
                == #"{"$and":[{"foo":{"$gt":5}},{"foo":{"$lt":10}}]}"#)
        #expect(try normalized(#"{"$not": {"foo": {"$gt": 10}}}"#) == #"{"foo":{"$lte":10}}"#)
        #expect(try normalized(#"{"$not": {"$and": [{"foo": {"$gt": 10}}, {"foo": {"$lt": 5}}]}}"#)
                == #"{"$or":[{"foo":{"$lte":10}},{"foo":{"$gte":5}}]}"#)
        #expect(try normalized(#"{"$nor": [{"a": 1}, {"b": {"$in": [1, 2]}}]}"#)
                == #"{"$and":[{"a":{"$ne":1}},{"b":{"$nin":[1,2]}}]}"#)
        #expect(try normalized(#"{"a": {"$not": {"$regex": "^x"}}}"#) == #"{"a":{"$not":{"$regex":"^x"}}}"#)
        #expect(try normalized(#"{"a": {"$not": {"$exists": true}}}"#) == #"{"a":{"$exists":false}}"#)
        #expect(try normalized(#"{"s": {"$elemMatch": {"$gte": 80, "$lt": 85}}}"#)
                == #"{"s":{"$elemMatch":{"$and":[{"":{"$gte":80}},{"":{"$lt":85}}]}}}"#)
        #expect(try normalized(#"{"a": {"$elemMatch": {"b": {"c": 1}}}}"#) == #"{"a":{"$elemMatch":{"b.c":{"$eq":1}}}}"#)
        #expect(try normalized("{}") == "{}")
        #expect(try normalized(#"{"a": {}}"#) == #"{"a":{"$eq":{}}}"#)
    }

    @Test("A bad selector is refused with CouchDB's error and reason")
    func errors() throws {
        #expect(mangoError(#"{"a": {"$foo": 1}}"#) == MangoError(error: "invalid_operator", reason: "Invalid operator: $foo"))
        #expect(mangoError(#"{"a": {"$in": 5}}"#) == MangoError(error: "bad_arg", reason: "Bad argument for operator $in: 5"))
        #expect(mangoError(#"{"a": {"$exists": "yes"}}"#) == MangoError(error: "bad_arg", reason: "Bad argument for operator $exists: <<121,101,115>>"))
        #expect(mangoError(#"{"a": {"$size": -1}}"#)?.error == "bad_arg")
        #expect(mangoError(#"{"a": {"$mod": [2]}}"#)?.error == "bad_arg")
        #expect(mangoError(#"{"a": {"$mod": [0, 1]}}"#)?.error == "bad_arg")
        #expect(mangoError(#"{"a": {"$regex": "("}}"#) == MangoError(error: "bad_arg", reason: "Bad argument for operator $regex: <<40>>"))
        #expect(mangoError(#"{"a": {"$elemMatch": 3}}"#)?.error == "bad_arg")
        #expect(mangoError(#"{"$and": {"a": 1}}"#) == MangoError(error: "bad_arg", reason: "Bad argument for operator $and: {[{<<97>>,1}]}"))
        #expect(mangoError(#"{"a": {"$where": "x"}}"#) == MangoError(error: "not_supported", reason: "Unsupported operator: $where"))
        #expect(mangoError(#"{"a..b": 1}"#) == MangoError(error: "invalid_field_name", reason: "Invalid field name: a..b"))
        #expect(mangoError(#"{"$gt": 5}"#) == MangoError(error: "invalid_selector", reason: "One or more conditions is missing a field name."))
        #expect(mangoError("[1]") == MangoError(error: "invalid_selector_json", reason: "Selector must be a JSON object, not: [1]"))
        let error = try #require(mangoError(#"{"a": {"$foo": 1}}"#))
        #expect(error.errorCode == .badRequest)
    }

    @Test("Comparisons use CouchDB's collation; _id compares in raw order")
    func comparisons() throws {
        let doc = #"{"_id": "b", "n": 5, "s": "apple", "z": null, "t": true, "arr": [1, 2], "o": {"k": 1}}"#
        #expect(try matches(#"{"n": 5}"#, doc))
        #expect(try matches(#"{"n": 5.0}"#, doc))
        #expect(try !matches(#"{"n": "5"}"#, doc))
        #expect(try matches(#"{"n": {"$gt": 4, "$lte": 5}}"#, doc))
        #expect(try matches(#"{"n": {"$lt": "a"}}"#, doc), "numbers sort before strings")
        #expect(try matches(#"{"n": {"$gt": true}}"#, doc), "numbers sort after booleans")
        #expect(try matches(#"{"s": {"$lt": "Apple"}}"#, doc), "ICU: lower case before upper case at the tertiary level")
        #expect(try matches(#"{"s": {"$lt": "B"}}"#, doc), "ICU: a < B, where bytes would say otherwise")
        #expect(try matches(#"{"arr": [1, 2]}"#, doc))
        #expect(try !matches(#"{"arr": 1}"#, doc), "$eq compares the whole array")
        #expect(try matches(#"{"o": {"$eq": {"k": 1}}}"#, doc))
        #expect(try matches(#"{"o.k": 1}"#, doc))
        #expect(try matches(#"{"arr.1": 2}"#, doc), "a number in a path indexes an array")
        #expect(try !matches(#"{"arr.5": 2}"#, doc))
        #expect(try matches(#"{"z": null, "t": true}"#, doc))
        #expect(try matches(#"{"n": {"$ne": 6}}"#, doc))
        #expect(try !matches(#"{"missing": {"$ne": 6}}"#, doc), "a missing field matches no comparison, $ne included")
        // _id: raw order, where "B" < "a" in bytes though not in ICU's order.
        #expect(try matches(#"{"_id": {"$gt": "B"}}"#, doc))
        #expect(try matches(#"{"s": {"$lt": "B"}}"#, doc))
        #expect(try matches(#"{"a\\.b": 1}"#, #"{"a.b": 1}"#), "an escaped dot is part of the member name")
    }

    @Test("A $regex that backtracks without end is no match, as with CouchDB's match limit; long strings still match",
          .timeLimit(.minutes(1)))
    func regexBacktrackingLimit() throws {
        // (a+)+$ tries every split of the a's before the "!": about 2^n steps.
        let hostile = #"{"s": "\#(String(repeating: "a", count: 60))!"}"#
        #expect(try !matches(#"{"s": {"$regex": "(a+)+$"}}"#, hostile))
        #expect(try matches(#"{"s": {"$not": {"$regex": "(a+)+$"}}}"#, hostile))
        #expect(try matches(#"{"s": {"$regex": "(a+)+$"}}"#, #"{"s": "aaaa"}"#))
        // A pattern that scans a long string once is within its bound, however long.
        let long = #"{"s": "\#(String(repeating: "ab", count: 2_000_000))needle"}"#
        #expect(try matches(#"{"s": {"$regex": "needle$"}}"#, long))
        #expect(try !matches(#"{"s": {"$regex": "needles"}}"#, long))
    }

    @Test("Each operator matches as CouchDB's mango_selector:match/3")
    func operators() throws {
        let doc = #"{"name": "Ann Smith", "age": 41, "tags": ["a", "b", "c"], "scores": [70, 82, 95], "m": {"x": 1, "yy": 2}, "e": [], "f": 2.5}"#
        #expect(try matches(#"{"age": {"$exists": true}}"#, doc))
        #expect(try matches(#"{"nope": {"$exists": false}}"#, doc))
        #expect(try !matches(#"{"age": {"$exists": false}}"#, doc))
        #expect(try matches(#"{"age": {"$type": "number"}, "tags": {"$type": "array"}, "m": {"$type": "object"}}"#, doc))
        #expect(try matches(#"{"age": {"$in": [40, 41]}}"#, doc))
        #expect(try matches(#"{"tags": {"$in": ["z", "b"]}}"#, doc), "$in on an array: any element equal to any argument")
        #expect(try !matches(#"{"age": {"$in": []}}"#, doc))
        #expect(try matches(#"{"age": {"$nin": []}}"#, doc))
        #expect(try matches(#"{"tags": {"$nin": ["z"]}}"#, doc))
        #expect(try !matches(#"{"tags": {"$nin": ["a"]}}"#, doc))
        #expect(try matches(#"{"tags": {"$size": 3}}"#, doc))
        #expect(try !matches(#"{"name": {"$size": 9}}"#, doc))
        #expect(try matches(#"{"age": {"$mod": [10, 1]}}"#, doc))
        #expect(try !matches(#"{"f": {"$mod": [2, 0]}}"#, doc), "$mod matches integers only")
        #expect(try matches(#"{"name": {"$regex": "Sm.th"}}"#, doc), "a regex matches anywhere in the string")
        #expect(try !matches(#"{"age": {"$regex": "4"}}"#, doc))
        #expect(try matches(#"{"tags": {"$all": ["c", "a"]}}"#, doc))
        #expect(try !matches(#"{"tags": {"$all": []}}"#, doc))
        #expect(try matches(#"{"tags": {"$all": [["a", "b", "c"]]}}"#, doc), "a single array argument equal to the value")
        #expect(try matches(#"{"scores": {"$elemMatch": {"$gte": 80, "$lt": 85}}}"#, doc))
        #expect(try !matches(#"{"scores": {"$elemMatch": {"$gte": 83, "$lt": 85}}}"#, doc))
        #expect(try matches(#"{"scores": {"$allMatch": {"$gt": 60}}}"#, doc))
        #expect(try !matches(#"{"e": {"$allMatch": {"$gt": 60}}}"#, doc), "$allMatch needs a non-empty array")
        #expect(try matches(#"{"m": {"$keyMapMatch": {"$eq": "yy"}}}"#, doc))
        #expect(try matches(#"{"name": {"$beginsWith": "Ann"}}"#, doc))
        #expect(try !matches(#"{"age": {"$beginsWith": "4"}}"#, doc))
        #expect(try matches(#"{"$or": [{"age": 1}, {"name": {"$regex": "^Ann"}}]}"#, doc))
        #expect(try matches(#"{"$or": []}"#, doc), "an empty $or is true in CouchDB")
        #expect(try matches(#"{"$and": []}"#, doc))
        #expect(try !matches(#"{"$nor": [{"age": 41}]}"#, doc))
        #expect(try matches(#"{"name": {"$not": {"$regex": "^Bob"}}}"#, doc))
        #expect(try !matches(#"{"missing": {"$not": {"$regex": "^Bob"}}}"#, doc), "a negated condition still needs the field")
        #expect(try matches(#"{"kids": {"$elemMatch": {"name": "Cid"}}}"#, #"{"kids": [{"name": "Bo"}, {"name": "Cid"}]}"#))
        #expect(try matches("{}", doc))
        #expect(try matches(#"{"a\\.b": 1, "q": {"$exists": false}}"#, #"{ "x" : [1, {"y": 2}], "a.b" : 1 }"#))
        #expect(try matches(#"{"x.1.y": 2, "x.0": {"$gt": 0}}"#, #"{ "x" : [1, {"y": 2}] }"#))
        #expect(try !matches(#"{"x.2": {"$exists": false}}"#, #"{"x": [1]}"#), "past an array's end is a bad path, not a missing member")
        #expect(try matches(#"{"k\u00e9": 1}"#.replacingOccurrences(of: "\\u00e9", with: "é"), #"{"k\u00e9": 1}"#), "an escaped key is compared decoded")
        #expect(try matches(#"{"n.m": {"$exists": false}}"#, #"{"n": {"o": 1}}"#))
        #expect(try !matches(#"{"n.o.p": {"$exists": false}}"#, #"{"n": {"o": 1}}"#))
    }
}
