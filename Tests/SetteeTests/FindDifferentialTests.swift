import Foundation
import Testing
import Settee

/// Random documents and random selectors: what `find` returns through JSON
/// and array indexes (chosen by the planner or named by `use_index`) is what a scan of
/// every document returns (with a partial index's filter, once it is
/// used), before and after edits the indexes catch up with; a request read
/// page by page through its bookmarks, or a window of it by `skip` and
/// `limit`, returns the same documents in the same order; one sorted by
/// one or two fields comes in the order of a JavaScript view's keys; projections to a
/// few fields (a covering index's rebuilt from its keys) are the scan's,
/// and the elements of `v` an `UNNEST` request finds through an array
/// index are those a read of every document finds. The documents are
/// built, edited and deleted, then purged (some written again). Each run draws a
/// new seed, printed in every failure (`SETTEE_FIND_SEED=…` replays it).
@Suite("find through indexes equals a scan of every document")
struct FindDifferentialTests {
    /// Values that sort next to each other or collate equal: canonically
    /// equivalent strings, case, `1`/`1.0`, `-0`/`0`, and every JSON type.
    static let values = [
        #""a""#, #""A""#, #""b""#, #""aa""#, #""ab""#, #""a b""#, #""é""#, #""e\u0301""#, #""e""#, #""ä""#, #""""#,
        "0", "-0", "1", "1.0", "1.5", "2", "10", "-3", "1e3",
        "true", "false", "null",
        "[]", "[1]", "[1, 2]", #"["a"]"#, "[[1]]", #"[{"k": 1}, 2]"#, #"[{"k": "a"}, {"j": 1}]"#,
        "{}", #"{"k": 1}"#, #"{"k": "a"}"#,
    ]
    static let fields = ["v", "w", "n.x"]
    /// JSON indexes, a partial one, and array indexes of `v`'s elements and of their `k`.
    static let indexes: [(name: String, index: String, partial: String?)] = [
        ("v", #"{"fields": ["v"]}"#, nil), ("vw", #"{"fields": ["v", "w"]}"#, nil),
        ("wv", #"{"fields": ["w", {"v": "asc"}]}"#, nil), ("nx", #"{"fields": ["n.x"]}"#, nil),
        ("pv", #"{"fields": ["v"], "partial_filter_selector": {"w": {"$gt": 1}}}"#, #"{"w": {"$gt": 1}}"#),
        ("av", #"{"array": "v"}, "type": "array""#, nil), ("avk", #"{"array": "v", "fields": ["k"]}, "type": "array""#, nil),
    ]

    struct Fixture {
        let directory = TemporaryDirectory()
        let indexed: Database
        let scanned: Database
        var random: SplitMix64
        let seed: UInt64
        /// Projections answered from an index's keys alone, and elements
        /// found through an array index: the paths the checks must have taken.
        var coveredReads = 0
        var indexedElementReads = 0

        init(seed: UInt64) throws {
            self.seed = seed
            random = SplitMix64(seed: seed)
            var options = Database.Options()
            options.javaScriptWorkers = 1
            indexed = try Database(at: directory.url.appendingPathComponent("indexed"), options: options)
            scanned = try Database(at: directory.url.appendingPathComponent("scanned"), options: options)
            // The order `find` sorts `v` in, as a JavaScript view's rows have it.
            try scanned.put(#"{"_id": "_design/s", "views": {"v": {"map": "function (doc) { if ('v' in doc) emit(doc.v, null); }", "reduce": "_count"}, "# +
                #""vw": {"map": "function (doc) { if ('v' in doc && 'w' in doc) emit([doc.v, doc.w], null); }", "reduce": "_count"}, "# +
                #""wv": {"map": "function (doc) { if ('v' in doc && 'w' in doc) emit([doc.w, doc.v], null); }", "reduce": "_count"}}}"#)
            for index in FindDifferentialTests.indexes {
                try indexed.createIndex(IndexRequest(json: #"{"index": \#(index.index), "ddoc": "d", "name": "\#(index.name)"}"#))
            }
        }

        mutating func value() -> String { FindDifferentialTests.values.randomElement(using: &random)! }

        /// A document with `v`, `w` and `n.x` each present most of the time
        /// (`n` sometimes not an object).
        mutating func document(_ id: String) -> String {
            var members = [#""_id": "\#(id)""#]
            if Int.random(in: 0..<6, using: &random) > 0 { members.append(#""v": \#(value())"#) }
            if Int.random(in: 0..<6, using: &random) > 0 { members.append(#""w": \#(value())"#) }
            switch Int.random(in: 0..<4, using: &random) {
            case 0: break
            case 1: members.append(#""n": \#(value())"#)
            default: members.append(#""n": {"x": \#(value()), "y": 1}"#)
            }
            return "{" + members.joined(separator: ", ") + "}"
        }

        /// Puts the same document in both databases.
        func put(_ text: String) throws {
            for db in [indexed, scanned] {
                var members = try JSONValue(parsing: text).objectValue!
                let id = members.first { $0.key == "_id" }!.value.stringValue!
                if let current = try db.document(id) { members.append((key: "_rev", value: .string(current.revision.description))) }
                try db.put(JSONValue.object(members).jsonText)
            }
        }

        /// Purges a document (every revision) from both databases.
        func purge(_ id: String) throws {
            for db in [indexed, scanned] { _ = try db.purge(id) }
        }

        func delete(_ id: String) throws {
            for db in [indexed, scanned] {
                if let current = try db.document(id) { try db.delete(id, revision: current.revision) }
            }
        }

        /// One operator's condition on a field.
        mutating func condition() -> String {
            switch Int.random(in: 0..<21, using: &random) {
            case 0: return #"{"$eq": \#(value())}"#
            case 1: return #"{"$gt": \#(value())}"#
            case 2: return #"{"$gte": \#(value())}"#
            case 3: return #"{"$lt": \#(value())}"#
            case 4: return #"{"$lte": \#(value())}"#
            case 5: return #"{"$gt": \#(value()), "$lt": \#(value())}"#
            case 6: return #"{"$gte": \#(value()), "$lte": \#(value())}"#
            case 7: return #"{"$ne": \#(value())}"#
            case 8: return #"{"$in": [\#(value()), \#(value())]}"#
            case 9: return #"{"$nin": [\#(value()), \#(value())]}"#
            case 10: return #"{"$exists": \#(Bool.random(using: &random))}"#
            case 11: return #"{"$type": "\#(["string", "number", "boolean", "null", "array", "object"].randomElement(using: &random)!)"}"#
            case 12: return #"{"$beginsWith": "\#(["a", "e", "", "A"].randomElement(using: &random)!)"}"#
            case 13: return #"{"$size": \#(Int.random(in: 0..<3, using: &random))}"#
            case 14: return #"{"$elemMatch": {"$gte": 1}}"#
            case 16: return #"{"$elemMatch": {"k": \#(condition())}}"#
            case 17: return #"{"$all": [\#(value())]}"#
            case 18: return #"{"$allMatch": \#(condition())}"#
            case 19: return #"{"$elemMatch": {"$eq": \#(value())}}"#
            case 15: return #"{"$not": \#(condition())}"#
            default: return #"{"$regex": "^a"}"#
            }
        }

        mutating func field() -> String { FindDifferentialTests.fields.randomElement(using: &random)! }

        /// A selector of one to three conditions, combined as `find` allows.
        mutating func selector() -> String {
            let first = #"{"\#(field())": \#(condition())}"#
            let second = #"{"\#(field())": \#(condition())}"#
            switch Int.random(in: 0..<7, using: &random) {
            case 0, 1: return first
            case 2: return #"{"\#(field())": \#(value())}"#
            case 3: return #"{"$and": [\#(first), \#(second)]}"#
            case 4: return #"{"$or": [\#(first), \#(second)]}"#
            case 5: return #"{"$nor": [\#(first)]}"#
            default: return #"{"$and": [\#(first), {"$or": [\#(second), {"\#(field())": \#(condition())}]}]}"#
            }
        }

        /// The ids a request finds, in order, and its warning; or its error's text.
        func ids(_ request: FindRequest, in db: Database) -> (ids: [String], warning: String?, error: String?) {
            do {
                let result = try db.find(request)
                return (result.documents.compactMap { $0["_id"]?.stringValue }, result.warning, nil)
            } catch {
                return ([], nil, "\(error)")
            }
        }

        /// Sorts what `selector` finds by `v`, by `v` then `w` or by `w` then
        /// `v` (of the documents with those fields), through an index, and
        /// compares the order with that of a view's keys.
        mutating func checkSorted(_ selector: String, round: String) throws {
            let descending = Bool.random(using: &random)
            let (fields, view) = [(["v"], "v"), (["v", "w"], "vw"), (["w", "v"], "wv")].randomElement(using: &random)!
            let exists = fields.map { #"{"\#($0)": {"$exists": true}}"# }.joined(separator: ", ")
            var request = FindRequest(selector: try JSONValue(parsing: #"{"$and": [\#(selector), \#(exists)]}"#))
            request.limit = 10_000
            let matching = Set(ids(request, in: scanned).ids)
            request.sort = fields.map { FindRequest.SortField($0, descending: descending) }
            let sorted = ids(request, in: indexed)
            let context = "seed \(seed), \(round): \(selector) sorted by \(fields) \(descending ? "descending" : "ascending")"
            #expect(sorted.error == nil, "\(context): \(sorted.error ?? "")")
            // Each document's place among the view's keys (keys that collate equal share one).
            let rows = try scanned.query("s/\(view)", options: ViewQueryOptions(reduce: false)).rows.compactMap(\.id)
            let groups = try scanned.query("s/\(view)", options: ViewQueryOptions(parameters: [("group", "true")])).rows
            var place: [String: Int] = [:]
            var next = rows.makeIterator()
            for (number, group) in groups.enumerated() {
                for _ in 0..<Int(try group.value.doubleValue ?? 0) { place[next.next()!] = number }
            }
            let places = sorted.ids.map { place[$0] ?? -1 }
            #expect(Set(sorted.ids) == matching, "\(context)")
            #expect(places == (descending ? places.sorted(by: >) : places.sorted()), "\(context): \(places)")
        }

        /// Projects what `selector` finds to a few fields through a named
        /// index (a covering one rebuilds them from its keys, without the
        /// documents) and compares them with the scan's projections.
        mutating func checkProjected(_ selector: String, round: String) throws {
            let fields = [["_id", "v"], ["v"], ["_id", "v", "w"], ["w", "v"], ["_id", "n.x"], ["n.x", "_id"], ["n"]].randomElement(using: &random)!
            let index = FindDifferentialTests.indexes.filter { $0.partial == nil }.randomElement(using: &random)!
            var request = FindRequest(selector: try JSONValue(parsing: selector))
            request.limit = 10_000
            request.fields = fields
            request.useIndex = ["d", index.name]
            var scan = request
            scan.useIndex = []
            request.executionStats = true
            func projections(_ request: FindRequest, in db: Database) -> [String] {
                do {
                    let result = try db.find(request)
                    if db === indexed, !result.found.isEmpty, result.executionStats?.totalDocsExamined == 0 { coveredReads += 1 }
                    return result.found.map(\.description).sorted()
                } catch {
                    return ["error: \(error)"]
                }
            }
            let found = projections(request, in: indexed)
            let expected = projections(scan, in: scanned)
            #expect(found == expected, "seed \(seed), \(round): \(selector) fields \(fields) use_index \(index.name): found \(Set(found).subtracting(expected).sorted().prefix(4)), expected \(Set(expected).subtracting(found).sorted().prefix(4))")
        }

        /// The elements of `v` that an element selector matches, in
        /// documents a parent selector matches: through the array indexes as
        /// through a read of every document.
        mutating func checkElements(round: String) throws {
            let element = Bool.random(using: &random) ? condition() : #"{"k": \#(condition())}"#
            let parent = Int.random(in: 0..<3, using: &random) == 0 ? selector() : "{}"
            let request = UnnestRequest(path: "v", elementSelector: try JSONValue(parsing: element), parentSelector: try JSONValue(parsing: parent))
            func elements(in db: Database) -> (elements: [UnnestedElement], error: String?) {
                do {
                    let result = try db.findElements(request)
                    if db === indexed, !result.elements.isEmpty, result.index.type == "array" { indexedElementReads += 1 }
                    return (result.elements, nil)
                } catch {
                    return ([], "\(error)")
                }
            }
            let found = elements(in: indexed)
            let expected = elements(in: scanned)
            #expect(found.error == expected.error, "seed \(seed), \(round): elements of v matching \(element) in \(parent)")
            #expect(found.elements == expected.elements,
                    "seed \(seed), \(round): elements of v matching \(element) in \(parent): found \(found.elements.map { "\($0.documentID)[\($0.position)]" }), expected \(expected.elements.map { "\($0.documentID)[\($0.position)]" })")
        }

        /// Compares every way of reading `selector` through the indexes with the scan.
        mutating func check(_ selector: String, round: String) throws {
            var request = FindRequest(selector: try JSONValue(parsing: selector))
            request.limit = 10_000
            let context = "seed \(seed), \(round): \(selector)"
            var ways: [(useIndex: [String], partial: String?)] = [([], nil)] + FindDifferentialTests.indexes.map { (["d", $0.name], $0.partial) }
            ways.shuffle(using: &random)
            for (useIndex, partial) in ways.prefix(3) {
                request.useIndex = useIndex
                let found = ids(request, in: indexed)
                // A partial index, named and used (no warning that it was not, or that
                // no index was), finds what matches its filter too: CouchDB's rule.
                var scan = request
                scan.useIndex = []
                let fellBack = ["was not used", "No matching index"].contains { found.warning?.contains($0) == true }
                if let partial, found.error == nil, !fellBack {
                    scan.selector = try JSONValue(parsing: #"{"$and": [\#(selector), \#(partial)]}"#)
                }
                let expected = ids(scan, in: scanned)
                func documents(_ ids: Set<String>) -> [String] {
                    ids.sorted().prefix(3).map { id in (try? scanned.document(id)).flatMap { try? $0?.value.jsonText } ?? id }
                }
                #expect(found.ids.sorted() == expected.ids.sorted(),
                        "\(context) use_index \(useIndex) (warning \(found.warning ?? "none")): found only \(documents(Set(found.ids).subtracting(expected.ids))), missing \(documents(Set(expected.ids).subtracting(found.ids)))")
                #expect(found.error == expected.error, "\(context) use_index \(useIndex)")
                // Read again a few at a time, each page from the last one's bookmark.
                let all = found.ids
                guard found.error == nil, all.count > 1 else { continue }
                var paged: [String] = []
                var page = request
                page.limit = Int.random(in: 1...4, using: &random)
                for _ in 0...all.count {
                    let result = try indexed.find(page)
                    let ids = result.documents.compactMap { $0["_id"]?.stringValue }
                    paged += ids
                    if ids.isEmpty { break }
                    page.bookmark = result.bookmark
                }
                #expect(paged == all, "\(context) use_index \(useIndex), in pages of \(page.limit)")
                // And a window of them by `skip` and `limit`.
                var window = request
                window.skip = Int.random(in: 0..<all.count, using: &random)
                window.limit = Int.random(in: 1...5, using: &random)
                #expect(ids(window, in: indexed).ids == Array(all.dropFirst(window.skip).prefix(window.limit)),
                        "\(context) use_index \(useIndex), skip \(window.skip) limit \(window.limit)")
            }
        }
    }

    @Test("Random selectors over random documents, before and after random edits and purges")
    func randomSelectors() throws {
        let seed = ProcessInfo.processInfo.environment["SETTEE_FIND_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        var fixture = try Fixture(seed: seed)
        let ids = (0..<240).map { String(format: "d%03d", $0) }
        for id in ids { try fixture.put(fixture.document(id)) }
        for round in ["built", "edited", "purged"] {
            if round == "edited" {
                for id in ids.shuffled(using: &fixture.random).prefix(80) { try fixture.put(fixture.document(id)) }
                for id in ids.shuffled(using: &fixture.random).prefix(24) { try fixture.delete(id) }
                for id in (240..<270).map({ String(format: "d%03d", $0) }) { try fixture.put(fixture.document(id)) }
            }
            if round == "purged" {
                // Live and deleted documents purged, some of them written again.
                let purged = ids.shuffled(using: &fixture.random).prefix(30)
                for id in purged { try fixture.purge(id) }
                for id in purged.prefix(6) { try fixture.put(fixture.document(id)) }
            }
            for _ in 0..<100 { try fixture.check(fixture.selector(), round: round) }
            for _ in 0..<30 { try fixture.checkSorted(fixture.selector(), round: round) }
            for _ in 0..<40 { try fixture.checkProjected(fixture.selector(), round: round) }
            for _ in 0..<40 { try fixture.checkElements(round: round) }
        }
        #expect(fixture.coveredReads > 0 && fixture.indexedElementReads > 0,
                "seed \(seed): \(fixture.coveredReads) covering reads, \(fixture.indexedElementReads) through an array index")
    }
}
