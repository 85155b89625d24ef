import Testing
@testable import Settee

/// A stand-in for the view collation: null < false < true < numbers < strings < arrays < objects,
/// numbers by value, strings by code point, arrays element by element.
private func testCompare(_ a: JSONValue, _ b: JSONValue) -> Int {
    func rank(_ v: JSONValue) -> Int {
        switch v {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .number: return 3
        case .string: return 4
        case .array: return 5
        case .object: return 6
        }
    }
    switch (a, b) {
    case let (.number(x, _), .number(y, _)):
        return x < y ? -1 : (x > y ? 1 : 0)
    case let (.string(x), .string(y)):
        return x.unicodeScalars.lexicographicallyPrecedes(y.unicodeScalars) ? -1 : (x == y ? 0 : 1)
    case let (.array(x), .array(y)):
        for (l, r) in zip(x, y) {
            let c = testCompare(l, r)
            if c != 0 { return c }
        }
        return x.count < y.count ? -1 : (x.count > y.count ? 1 : 0)
    default:
        let (ra, rb) = (rank(a), rank(b))
        return ra < rb ? -1 : (ra > rb ? 1 : 0)
    }
}

private func parse(_ query: [(String, String)]) throws(QueryError) -> ViewQueryOptions {
    try ViewQueryOptions(parameters: query.map { (name: $0.0, value: $0.1) })
}

private func parseError(_ query: [(String, String)]) -> QueryError? {
    do {
        _ = try parse(query)
        return nil
    } catch {
        return error
    }
}

private func viewError(_ query: [(String, String)], reduce: Bool) -> QueryError? {
    do {
        _ = try parse(query).validated(viewHasReduce: reduce, compare: testCompare)
        return nil
    } catch {
        return error
    }
}

private func allDocsError(_ query: [(String, String)]) -> QueryError? {
    do {
        _ = try parse(query).validatedForAllDocs()
        return nil
    } catch {
        return error
    }
}

private func view(_ query: [(String, String)], reduce: Bool) throws -> ViewQueryOptions {
    try parse(query).validated(viewHasReduce: reduce, compare: testCompare)
}

private func queryParse(_ reason: String) -> QueryError {
    QueryError(error: "query_parse_error", reason: reason)
}

@Suite("ViewQueryOptions", .ownThread)
struct ViewQueryOptionsTests {
    // MARK: Defaults and single parameters

    @Test func defaultsMatchMrargs() throws {
        let options = try parse([])
        #expect(options == ViewQueryOptions())
        #expect(options.key == nil && options.keys == nil && options.startKey == nil && options.endKey == nil)
        #expect(options.startKeyDocID == nil && options.endKeyDocID == nil)
        #expect(options.inclusiveEnd == true)
        #expect(options.descending == false)
        #expect(options.limit == nil)
        #expect(options.skip == 0)
        #expect(options.group == nil && options.groupLevel == nil && options.reduce == nil)
        #expect(options.includeDocs == false && options.conflicts == false && options.updateSeq == false)
        #expect(options.update == .true && options.stable == false && options.sorted == true)
    }

    @Test func keyAlone() throws {
        let options = try parse([("key", #""abc""#)])
        #expect(options.key == .string("abc"))
        #expect(options.startKey == nil && options.endKey == nil)
    }

    @Test func keysAlone() throws {
        #expect(try parse([("keys", "[1,\"a\",null]")]).keys == [.number(1), .string("a"), .null])
        #expect(try parse([("keys", "[]")]).keys == [])
    }

    @Test(arguments: ["startkey", "start_key"])
    func startKeyAliases(name: String) throws {
        #expect(try parse([(name, "[1,2]")]).startKey == .array([.number(1), .number(2)]))
    }

    @Test(arguments: ["endkey", "end_key"])
    func endKeyAliases(name: String) throws {
        #expect(try parse([(name, "{\"a\":true}")]).endKey == .object([(key: "a", value: .bool(true))]))
    }

    @Test(arguments: ["startkey_docid", "start_key_doc_id"])
    func startKeyDocIDAliases(name: String) throws {
        // Doc ids are raw text, not JSON.
        #expect(try parse([(name, "doc \"1\"")]).startKeyDocID == "doc \"1\"")
    }

    @Test(arguments: ["endkey_docid", "end_key_doc_id"])
    func endKeyDocIDAliases(name: String) throws {
        #expect(try parse([(name, "zz")]).endKeyDocID == "zz")
    }

    @Test func notAliases() throws {
        // CouchDB has no `start_key_docid`/`end_key_docid`: unknown names are ignored.
        #expect(try parse([("start_key_docid", "a"), ("end_key_docid", "b"), ("callback", "f"), ("", "x")])
            == ViewQueryOptions())
    }

    @Test func integers() throws {
        #expect(try parse([("limit", "10")]).limit == 10)
        #expect(try parse([("limit", "0")]).limit == 0)
        #expect(try parse([("limit", "+7")]).limit == 7)
        #expect(try parse([("limit", "007")]).limit == 7)
        #expect(try parse([("skip", "3")]).skip == 3)
        #expect(try parse([("skip", "-0")]).skip == 0)
        #expect(try parse([("group_level", "2")]).groupLevel == 2)
        #expect(try parse([("limit", "99999999999999999999999")]).limit == Int.max)
    }

    @Test func booleans() throws {
        #expect(try parse([("descending", "true")]).descending)
        #expect(try parse([("descending", "TRUE")]).descending)
        #expect(try parse([("inclusive_end", "False")]).inclusiveEnd == false)
        #expect(try parse([("include_docs", "true")]).includeDocs)
        #expect(try parse([("update_seq", "true")]).updateSeq)
        #expect(try parse([("sorted", "false")]).sorted == false)
        #expect(try parse([("reduce", "false")]).reduce == false)
        #expect(try parse([("group", "true")]).group == true)
        #expect(try parse([("conflicts", "true")]).conflicts)
        #expect(try parse([("attachments", "true")]).attachments)
        #expect(try parse([("att_encoding_info", "true")]).attEncodingInfo)
        // attachments=false never clears an earlier attachments=true.
        #expect(try parse([("attachments", "true"), ("attachments", "false")]).attachments)
    }

    @Test func staleUpdateStable() throws {
        let ok = try parse([("stale", "ok")])
        #expect(ok.update == .false && ok.stable)
        let after = try parse([("stale", "update_after")])
        #expect(after.update == .lazy && after.stable)
        #expect(try parse([("update", "false")]).update == .false)
        #expect(try parse([("update", "lazy")]).update == .lazy)
        #expect(try parse([("update", "true")]).update == .true)
        #expect(try parse([("stable", "true")]).stable)
        #expect(try parse([("stale", "ok"), ("stable", "false")]).stable == false)
        #expect(try parse([("partition", "p1")]).partition == "p1")
    }

    @Test func laterParametersWin() throws {
        #expect(try parse([("limit", "1"), ("limit", "2")]).limit == 2)
        #expect(try parse([("startkey", "1"), ("start_key", "2")]).startKey == .number(2))
        // jiffy's dedupe_keys: the last member of a repeated name stays, in its place.
        #expect(try parse([("key", #"{"a":1,"b":2,"a":3}"#)]).key
            == .object([(key: "b", value: .number(2)), (key: "a", value: .number(3))]))
    }

    // MARK: Parse errors

    @Test func booleanErrors() {
        #expect(parseError([("descending", "yes")]) == queryParse(#"Invalid boolean parameter: "yes""#))
        #expect(parseError([("group", "")]) == queryParse("Invalid boolean parameter: []"))
        #expect(parseError([("reduce", #"a"b\c"#)]) == queryParse(#"Invalid boolean parameter: "a\"b\\c""#))
        #expect(parseError([("include_docs", "1\n")]) == queryParse(#"Invalid boolean parameter: "1\n""#))
        // Latin-1-printable bytes print as a string, others as Erlang's list of bytes.
        #expect(parseError([("sorted", "é")]) == queryParse(#"Invalid boolean parameter: "é""#))
        #expect(parseError([("sorted", "€")]) == queryParse("Invalid boolean parameter: [226,130,172]"))
        #expect(parseError([("sorted", "a\u{1}")]) == queryParse("Invalid boolean parameter: [97,1]"))
    }

    @Test func longByteListsWrapLikeErlang() {
        // io_lib_pretty wraps a list that does not fit in 80 columns after the 27-column prefix.
        let value = String(repeating: "€", count: 6)  // 18 bytes, 3 digits each
        let bytes = "226,130,172,"
        // The first line holds 12 elements (up to column 76), the rest are indented under the first.
        let expected = "Invalid boolean parameter: [" + String(repeating: bytes, count: 4) + "\n"
            + String(repeating: " ", count: 28) + bytes + "226,130,172]"
        #expect(parseError([("group", value)]) == queryParse(expected))
    }

    @Test func integerErrors() {
        #expect(parseError([("limit", "abc")]) == queryParse(#"Invalid value for integer: "abc""#))
        #expect(parseError([("limit", "1.5")]) == queryParse(#"Invalid value for integer: "1.5""#))
        #expect(parseError([("skip", " 1")]) == queryParse(#"Invalid value for integer: " 1""#))
        #expect(parseError([("skip", "")]) == queryParse("Invalid value for integer: []"))
        #expect(parseError([("group_level", "+")]) == queryParse(#"Invalid value for integer: "+""#))
        #expect(parseError([("limit", "-1")]) == queryParse(#"Invalid value for positive integer: "-1""#))
        #expect(parseError([("skip", "-5")]) == queryParse(#"Invalid value for positive integer: "-5""#))
        #expect(parseError([("group_level", "-2")]) == queryParse(#"Invalid value for positive integer: "-2""#))
    }

    @Test func enumeratedValueErrors() {
        #expect(parseError([("stale", "false")]) == queryParse("Invalid value for `stale`."))
        #expect(parseError([("stale", "OK")]) == queryParse("Invalid value for `stale`."))
        #expect(parseError([("stable", "TRUE")]) == queryParse("Invalid value for `stable`."))
        #expect(parseError([("update", "yes")]) == queryParse("Invalid value for `update`."))
    }

    @Test func jsonErrors() {
        let invalid = QueryError(error: "bad_request", reason: "invalid UTF-8 JSON")
        #expect(parseError([("key", "abc")]) == invalid)
        #expect(parseError([("startkey", "[1,")]) == invalid)
        #expect(parseError([("end_key", "")]) == invalid)
        #expect(parseError([("keys", "[1,2")]) == invalid)
        // The first `keys` is decoded before any other parameter, as chttpd does.
        #expect(parseError([("limit", "x"), ("keys", "{")]) == invalid)
        #expect(invalid.description == "bad_request: invalid UTF-8 JSON")
    }

    @Test func partitionErrors() {
        #expect(parseError([("partition", "")])
            == QueryError(error: "illegal_partition", reason: "Partition must not be empty"))
        #expect(parseError([("partition", "_p")])
            == QueryError(error: "illegal_partition", reason: "Partition must not start with an underscore"))
        #expect(parseError([("partition", "a:b")])
            == QueryError(error: "illegal_partition", reason: "Partition must not contain a colon"))
        #expect(viewError([("partition", "p")], reduce: false)
            == queryParse("`partition` parameter is not supported in this design doc"))
        #expect(allDocsError([("partition", "p")])
            == queryParse("`partition` parameter is not supported on this db"))
    }

    // MARK: Validation: normalisation

    @Test func reduceDefaultsFromTheView() throws {
        #expect(try view([], reduce: true).reduce == true)
        #expect(try view([], reduce: false).reduce == false)
        #expect(try view([("reduce", "false")], reduce: true).reduce == false)
        #expect(try view([("reduce", "false")], reduce: false).reduce == false)
    }

    @Test func keyBecomesTheRange() throws {
        let options = try view([("key", "5")], reduce: false)
        #expect(options.key == nil && options.startKey == .number(5) && options.endKey == .number(5))
        // key then startkey: CouchDB keeps the key as the end.
        let later = try view([("key", "5"), ("startkey", "1")], reduce: false)
        #expect(later.startKey == .number(1) && later.endKey == .number(5))
        // startkey then key: the key replaces both.
        let earlier = try view([("startkey", "1"), ("key", "5")], reduce: false)
        #expect(earlier.startKey == .number(5) && earlier.endKey == .number(5))
    }

    @Test func singleKeysIsAKeyForViews() throws {
        let options = try view([("keys", #"["a"]"#)], reduce: true)
        #expect(options.keys == nil && options.startKey == .string("a") && options.endKey == .string("a"))
        // ...and so no multi-key error on a reduce view, and a later key just wins.
        let overridden = try view([("keys", "[1]"), ("key", "2")], reduce: false)
        #expect(overridden.startKey == .number(2) && overridden.keys == nil)
    }

    @Test func singleKeysStaysKeysForAllDocs() throws {
        let options = try parse([("keys", #"["a"]"#)]).validatedForAllDocs()
        #expect(options.keys == [.string("a")])
        #expect(options.startKey == .string("a") && options.endKey == .string("a"))
        #expect(allDocsError([("keys", "[1]"), ("key", "2")])
            == queryParse("`keys` is incompatible with `key`, `start_key` and `end_key`"))
    }

    @Test func groupingResolution() throws {
        let exact = try view([("group", "true")], reduce: true)
        #expect(exact.group == true && exact.groupLevel == nil && exact.grouping == .exact)
        let level = try view([("group_level", "2")], reduce: true)
        #expect(level.groupLevel == 2 && level.grouping == .level(2))
        // group=true with a group_level: the level wins.
        #expect(try view([("group", "true"), ("group_level", "1")], reduce: true).grouping == .level(1))
        #expect(try view([("group", "false")], reduce: true).grouping == .none)
        #expect(try view([("group", "false"), ("group_level", "0")], reduce: true).grouping == .none)
        let none = try view([], reduce: true)
        #expect(none.group == false && none.groupLevel == 0 && none.grouping == .none)
        // Grouping of level 0 is fine on a map view, even with group=true.
        #expect(try view([("group", "true"), ("group_level", "0")], reduce: false).groupLevel == 0)
        #expect(try view([("group", "false")], reduce: false).groupLevel == 0)
    }

    @Test func includeDocsWithoutReduce() throws {
        #expect(try view([("include_docs", "true"), ("reduce", "false")], reduce: true).includeDocs)
        #expect(try view([("include_docs", "true")], reduce: false).includeDocs)
        #expect(try view([("conflicts", "true"), ("reduce", "false")], reduce: true).conflicts)
    }

    @Test func multiKeyWithExactGrouping() throws {
        let options = try view([("keys", "[1,2]"), ("group", "true")], reduce: true)
        #expect(options.keys == [.number(1), .number(2)] && options.grouping == .exact)
        #expect(try view([("keys", "[1,2]")], reduce: false).keys == [.number(1), .number(2)])
        #expect(try view([("keys", "[]"), ("startkey", "1")], reduce: false).keys == [])
    }

    @Test func limitBoundary() throws {
        #expect(try view([("limit", "576460752303423487")], reduce: false).limit == 576460752303423487)
        let tooLarge = queryParse("Limit is too large, must not exceed 576460752303423487")
        #expect(viewError([("limit", "576460752303423488")], reduce: false) == tooLarge)
        #expect(viewError([("limit", "99999999999999999999999")], reduce: false) == tooLarge)
        #expect(allDocsError([("limit", "576460752303423488")]) == tooLarge)
    }

    // MARK: Validation errors

    @Test func reduceOnMapView() {
        #expect(viewError([("reduce", "true")], reduce: false) == queryParse("Reduce is invalid for map-only views."))
        #expect(allDocsError([("reduce", "true")]) == queryParse("Reduce is invalid for map-only views."))
        #expect(allDocsError([("reduce", "false")]) == nil)
    }

    @Test func multiKeyReduceNeedsGroupTrue() {
        let message = queryParse("Multi-key fetches for reduce views must use `group=true`")
        #expect(viewError([("keys", "[1,2]")], reduce: true) == message)
        #expect(viewError([("keys", "[1,2]"), ("group_level", "1")], reduce: true) == message)
        #expect(viewError([("keys", "[]")], reduce: true) == message)
        #expect(viewError([("keys", "[1,2]"), ("reduce", "false")], reduce: true) == nil)
    }

    @Test func keysMustBeAnArray() {
        #expect(viewError([("keys", #""a""#)], reduce: false) == queryParse("`keys` must be an array of strings."))
        #expect(viewError([("keys", "null")], reduce: true) == queryParse("`keys` must be an array of strings."))
        #expect(allDocsError([("keys", "{}")])
            == QueryError(error: "bad_request", reason: "`keys` parameter must be an array."))
    }

    @Test func keysIncompatibleWithKeyRange() {
        let message = queryParse("`keys` is incompatible with `key`, `start_key` and `end_key`")
        #expect(viewError([("key", "1"), ("keys", "[1,2]")], reduce: false) == message)
        #expect(viewError([("keys", "[1,2]"), ("key", "1")], reduce: false) == message)
        #expect(viewError([("keys", "[1,2]"), ("startkey", "1")], reduce: false) == message)
        #expect(viewError([("keys", "[1,2]"), ("end_key", "1")], reduce: false) == message)
        #expect(allDocsError([("keys", #"["a","b"]"#), ("startkey", #""a""#)]) == message)
    }

    @Test func groupFalseWithGroupLevel() {
        let message = queryParse("Can't specify group=false and group_level>0 at the same time")
        #expect(viewError([("group", "false"), ("group_level", "2")], reduce: true) == message)
        // determine_group_level runs first, so even on a map view.
        #expect(viewError([("group_level", "2"), ("group", "false")], reduce: false) == message)
    }

    @Test func groupingOnMapView() {
        let message = queryParse("Invalid use of grouping on a map view.")
        #expect(viewError([("group_level", "1")], reduce: false) == message)
        #expect(viewError([("group", "true")], reduce: false) == message)
        #expect(viewError([("group", "true"), ("reduce", "false")], reduce: true) == message)
        #expect(allDocsError([("group", "true")]) == message)
        #expect(allDocsError([("group", "false")]) == nil)
    }

    @Test func includeDocsOnReduce() {
        #expect(viewError([("include_docs", "true")], reduce: true) == queryParse("`include_docs` is invalid for reduce"))
        #expect(viewError([("include_docs", "true"), ("reduce", "true")], reduce: true)
            == queryParse("`include_docs` is invalid for reduce"))
        #expect(viewError([("include_docs", "false")], reduce: true) == nil)
    }

    @Test func conflictsOnReduce() {
        let message = queryParse("`conflicts` is invalid for reduce views.")
        #expect(viewError([("conflicts", "true")], reduce: true) == message)
        // Any given value counts, as CouchDB's default is `undefined`.
        #expect(viewError([("conflicts", "false")], reduce: true) == message)
        #expect(viewError([], reduce: true) == nil)
    }

    @Test func programmaticNegativeValues() throws {
        var options = ViewQueryOptions()
        options.limit = -1
        #expect(throws: queryParse("`limit` must be a positive integer.")) {
            try options.validated(viewHasReduce: false, compare: testCompare)
        }
        options = ViewQueryOptions()
        options.skip = -1
        #expect(throws: queryParse("`skip` must be >= 0")) {
            try options.validatedForAllDocs()
        }
        options = ViewQueryOptions()
        options.groupLevel = -1
        #expect(throws: queryParse("`group_level` must be >= 0")) {
            try options.validated(viewHasReduce: true, compare: testCompare)
        }
    }

    // MARK: Key range

    @Test func keyRangeDirection() {
        let ascending = queryParse(
            "No rows can match your key range, reverse your start_key and end_key or set descending=true")
        let descending = queryParse(
            "No rows can match your key range, reverse your start_key and end_key or set descending=false")
        #expect(viewError([("startkey", "1"), ("endkey", "2")], reduce: false) == nil)
        #expect(viewError([("startkey", "2"), ("endkey", "1")], reduce: false) == ascending)
        #expect(viewError([("startkey", "2"), ("endkey", "1"), ("descending", "true")], reduce: false) == nil)
        #expect(viewError([("startkey", "1"), ("endkey", "2"), ("descending", "true")], reduce: false) == descending)
        #expect(viewError([("start_key", #""b""#), ("end_key", #""a""#)], reduce: true) == ascending)
        // Only one end given, or the same key at both ends: nothing to check.
        #expect(viewError([("startkey", "2"), ("descending", "true")], reduce: false) == nil)
        #expect(viewError([("key", "2"), ("descending", "true")], reduce: false) == nil)
        // _all_docs has no range check.
        #expect(allDocsError([("startkey", #""b""#), ("endkey", #""a""#)]) == nil)
    }

    @Test func keyRangeUsesDocIDsWhenKeysCollateEqual() {
        let ascending = queryParse(
            "No rows can match your key range, reverse your start_key and end_key or set descending=true")
        let descending = queryParse(
            "No rows can match your key range, reverse your start_key and end_key or set descending=false")
        // [1] and [1.0] collate equal without being the same term; default ids make the range valid.
        #expect(viewError([("startkey", "[1]"), ("endkey", "[1.0, 2]")], reduce: false) == nil)
        let equalKeys: [(String, String)] = [("startkey", #""k""#), ("endkey", #""k ""#)]
        func equalCompare(_ a: JSONValue, _ b: JSONValue) -> Int { 0 }
        func check(_ query: [(String, String)]) -> QueryError? {
            do {
                _ = try parse(query).validated(viewHasReduce: false, compare: equalCompare)
                return nil
            } catch {
                return error
            }
        }
        #expect(check(equalKeys) == nil)
        #expect(check(equalKeys + [("descending", "true")]) == nil)
        #expect(check(equalKeys + [("startkey_docid", "a"), ("endkey_docid", "b")]) == nil)
        #expect(check(equalKeys + [("startkey_docid", "b"), ("endkey_docid", "a")]) == ascending)
        #expect(check(equalKeys + [("startkey_docid", "a"), ("endkey_docid", "a")]) == ascending)
        #expect(check(equalKeys + [("startkey_docid", "a"), ("endkey_docid", "b"), ("descending", "true")])
            == descending)
        #expect(check(equalKeys + [("startkey_docid", "b"), ("endkey_docid", "a"), ("descending", "true")]) == nil)
        // Ids compare by raw bytes; a given start id against the default end.
        #expect(check(equalKeys + [("startkey_docid", "\u{10FFFF}")]) == nil)
        #expect(check(equalKeys + [("endkey_docid", "")]) == ascending)
    }

    @Test func errorDescription() {
        #expect(queryParse("x").description == "query_parse_error: x")
    }
}

extension ViewQueryOptionsTests {
    @Test func assigningConflictsCountsAsGiven() {
        var options = ViewQueryOptions()
        #expect(throws: Never.self) { try options.validated(viewHasReduce: true, compare: testCompare) }
        options.conflicts = false
        #expect(throws: QueryError(error: "query_parse_error", reason: "`conflicts` is invalid for reduce views.")) {
            try options.validated(viewHasReduce: true, compare: testCompare)
        }
    }
}
