import Foundation
import Testing
import SetteeCore
@testable import Settee
@testable import SetteeViews

/// Views over random documents whose reductions are exact (integers), so
/// stored chunk partials and a walk over every row must agree to the byte.
private let reductionDesign = #"""
    {"_id": "_design/r", "views": {
      "count": {"map": "function (doc) { emit([doc.a, doc.b], null); }", "reduce": "_count"},
      "sum": {"map": "function (doc) { emit([doc.a, doc.b, doc.s], doc.v); }", "reduce": "_sum"},
      "stats": {"map": "function (doc) { emit(doc.b, doc.v); }", "reduce": "_stats"},
      "js": {"map": "function (doc) { emit([doc.a, doc.s], doc.v); }",
             "reduce": "function (keys, values, rereduce) { var c = 0, s = 0; for (var i = 0; i < values.length; i++) { if (rereduce) { c += values[i][0]; s += values[i][1]; } else { c += 1; s += values[i]; } } return [c, s]; }"},
      "map": {"map": "function (doc) { emit(doc.b, doc.a); if (doc.a === 3) emit(doc.b, null); }"},
      "long": {"map": "function (doc) { emit([doc.b % 5, doc.a === 0 ? Array(501).join('x') + doc.s : doc.s], null); }"}
    }}
    """#

private let words = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu"]

private func randomDocument(_ id: Int, _ random: inout SplitMix64) -> String {
    #"{"_id": "d\#(String(format: "%05d", id))", "a": \#(random.next() % 10), "b": \#(random.next() % 50), "s": "\#(words[Int(random.next() % 7)])", "v": \#(random.next() % 1000)}"#
}

/// A query's response, or its error as text, read from stored chunks or by walking every row.
private func queryOutcome(_ db: Database, _ designDocument: String, _ view: String, _ parameters: [(String, String)],
                          storedReductions: Bool) throws -> String {
    do {
        let options = try ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) })
        return try db.query(designDocument: designDocument, view: view, options: options, progress: { _ in },
                            storedReductions: storedReductions).json
    } catch let error as JavaScriptError {
        return "\(error.kind): \(error.message)"
    } catch let error as QueryError {
        return "\(error)"
    }
}

private struct ReductionFixture {
    let directory = TemporaryDirectory()
    let db: Database

    init(documents: Int, seed: UInt64) throws {
        var options = Database.Options()
        options.javaScriptWorkers = 2
        db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.loadDesignDocuments(from: directory.file("r.json", contents: reductionDesign))
        var random = SplitMix64(seed: seed)
        let lines = (0..<documents).map { randomDocument($0, &random) }
        let report = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        #expect(report.imported == documents)
    }

    /// The query's response (or error) with stored chunks and by walking every row.
    func bothWays(_ view: String, _ parameters: [(String, String)]) throws -> (stored: String, walked: String) {
        (try queryOutcome(db, "r", view, parameters, storedReductions: true),
         try queryOutcome(db, "r", view, parameters, storedReductions: false))
    }

    /// Every entry of a view's chunk table.
    func chunkEntries(_ view: String) throws -> [[UInt8]] {
        let signature = try db.designDocument("r")!.view(view)!.signature
        let tables = try db.indexes.tables(for: signature)
        return try db.environment.read { try $0.entries(of: tables.chunks) }
    }

    /// Recomputes a view's chunks from its rows in one pass.
    func rebuildChunks(_ view: String) throws {
        let definition = try db.designDocument("r")!.view(view)!
        let tables = try db.indexes.tables(for: definition.signature)
        let reducer = try definition.reduce.map { try Reducer(source: $0, view: definition, workers: try db.viewFunctions(), chunk: 1000) }
        try db.environment.write { transaction in
            try StoredReductions(rows: tables.rows, chunks: tables.chunks, reducer: reducer).rebuild(in: transaction)
        }
    }
}

/// Random query parameters over the views' key space.
private func randomParameters(_ view: String, _ random: inout SplitMix64) -> [(String, String)] {
    func key() -> String {
        switch view {
        case "stats", "map": return "\(random.next() % 52)"
        case "js": return random.next() % 3 == 0 ? "[\(random.next() % 10)]" : #"[\#(random.next() % 10), "\#(words[Int(random.next() % 7)])"]"#
        default: return random.next() % 3 == 0 ? "[\(random.next() % 11)]" : "[\(random.next() % 10), \(random.next() % 50)]"
        }
    }
    var parameters: [(String, String)] = []
    var start = random.next() % 4 == 0 ? nil : key()
    var end = random.next() % 4 == 0 ? nil : key()
    let descending = random.next() % 3 == 0
    // Keep ranges that can match: the bounds in scan order.
    if let s = start, let e = end, let sj = try? JSONParser.parse(Array(s.utf8)), let ej = try? JSONParser.parse(Array(e.utf8)),
       (CollationKey.compare(sj, ej, mode: .unicode) > 0) != descending {
        swap(&start, &end)
    }
    if let start { parameters.append(("startkey", start)) }
    if let end { parameters.append(("endkey", end)) }
    if descending { parameters.append(("descending", "true")) }
    if random.next() % 4 == 0 { parameters.append(("inclusive_end", "false")) }
    if view != "map" {
        switch random.next() % 4 {
        case 0: parameters.append(("group", "true"))
        case 1: parameters.append(("group_level", "\(random.next() % 4)"))
        case 2: parameters.append(("reduce", "false"))
        default: break
        }
    }
    if random.next() % 5 == 0 { parameters.append(("limit", "\(random.next() % 20)")) }
    if random.next() % 5 == 0 { parameters.append(("skip", "\(random.next() % 30)")) }
    return parameters
}

@Suite("Stored reductions", .ownThread)
struct StoredReductionTests {
    static let views = ["count", "sum", "stats", "js", "map"]

    @Test("Reductions, groups and offsets from stored chunks equal a walk over every row, for random ranges")
    func randomRanges() throws {
        let fixture = try ReductionFixture(documents: 6000, seed: 1)
        var random = SplitMix64(seed: 2)
        var chunksUsed = 0
        for view in Self.views {
            // The full range: one stored partial where a walk reads 6000 or more rows.
            let full = try fixture.bothWays(view, [])
            #expect(full.stored == full.walked, "\(view)")
            for _ in 0..<40 {
                let parameters = randomParameters(view, &random)
                let (stored, walked) = try fixture.bothWays(view, parameters)
                #expect(stored == walked, "\(view) \(parameters)")
            }
            chunksUsed += try fixture.chunkEntries(view).count
        }
        #expect(chunksUsed > 5 * 6000 / 40, "every view has level-1 chunks of about 32 rows")
    }

    @Test("Offsets read with the index's chunk boundaries kept in memory equal a walk, before and after an edit")
    func offsetsFromKeptCounts() throws {
        let fixture = try ReductionFixture(documents: 20000, seed: 5)
        var random = SplitMix64(seed: 6)
        func offsets(_ round: String) throws {
            var used = 0
            for _ in 0..<60 {
                let key = random.next() % 5 == 0 ? "\(random.next() % 52)" : "\(random.next() % 50).5"
                // A range from a start key, or one key's rows; a few rows, none, or some skipped.
                var parameters = [(random.next() % 4 == 0 ? "key" : "startkey", key), ("limit", ["1", "0", "3"][Int(random.next() % 3)])]
                if random.next() % 4 == 0 { parameters.append(("skip", "2")) }
                if parameters[0].0 == "startkey", random.next() % 3 == 0 {
                    parameters.append(("startkey_docid", "d\(String(format: "%05d", Int(random.next() % 20000)))"))
                }
                let (stored, walked) = try fixture.bothWays("map", parameters)
                #expect(stored == walked, "\(round) \(parameters)")
                used += stored.contains(#""offset":0"#) ? 0 : 1
            }
            #expect(used > 40, "\(round): most ranges start past the first chunk")
        }
        try offsets("first state")
        let signature = try fixture.db.designDocument("r")!.view("map")!.signature
        let kept = try fixture.db.environment.read { try fixture.db.indexes.snapshot(signature, in: $0) }
        #expect(kept?.keptChunkCounts?.hasLevelOne == true, "the state served 120 queries, from level-1 boundaries")
        // An edit makes a new state: what was kept for the old one is not used.
        _ = try fixture.db.put(#"{"_id": "new", "a": 1, "b": 0, "s": "ant", "v": 1}"#)
        try offsets("after an edit")
    }

    @Test("Offsets of ranges starting among keys past LMDB's key size, read with kept chunk boundaries, equal a walk")
    func offsetsAmongLongKeys() throws {
        let fixture = try ReductionFixture(documents: 3000, seed: 7)
        var random = SplitMix64(seed: 8)
        let long = String(repeating: "x", count: 500)
        var longRows = 0
        for _ in 0..<40 {
            let word = words[Int(random.next() % 7)]
            var parameters = [("startkey", "[\(random.next() % 5),\"\(random.next() % 2 == 0 ? long + word : word)\"]"), ("limit", "2")]
            if random.next() % 2 == 0 { parameters.append(("startkey_docid", "d\(String(format: "%05d", Int(random.next() % 3000)))")) }
            let (stored, walked) = try fixture.bothWays("long", parameters)
            #expect(stored == walked, "\(parameters)")
            longRows += stored.contains(long) ? 1 : 0
        }
        #expect(longRows > 10, "ranges start among long keys")
        let signature = try fixture.db.designDocument("r")!.view("long")!.signature
        let kept = try fixture.db.environment.read { try fixture.db.indexes.snapshot(signature, in: $0) }
        #expect(kept?.keptChunkCounts != nil, "the offsets were read with kept boundaries")
    }

    @Test("After random edits, chunks kept up incrementally equal chunks rebuilt from the rows, and queries agree")
    func randomEdits() throws {
        let fixture = try ReductionFixture(documents: 3000, seed: 3)
        var random = SplitMix64(seed: 4)
        var nextID = 3000
        for view in Self.views { _ = try fixture.bothWays(view, []) }
        for round in 0..<5 {
            for _ in 0..<40 {
                let id = String(format: "d%05d", Int(random.next() % UInt64(nextID)))
                switch random.next() % 3 {
                case 0:
                    _ = try fixture.db.put(randomDocument(nextID, &random))
                    nextID += 1
                case 1:
                    if let document = try fixture.db.document(id) { _ = try fixture.db.delete(id, revision: document.revision) }
                default:
                    if let document = try fixture.db.document(id) {
                        var json = randomDocument(0, &random)
                        json = json.replacingOccurrences(of: #""_id": "d00000""#, with: #""_id": "\#(id)", "_rev": "\#(document.revision)""#)
                        _ = try fixture.db.put(json)
                    }
                }
            }
            for view in Self.views {
                let (stored, walked) = try fixture.bothWays(view, randomParameters(view, &random))
                #expect(stored == walked, "round \(round) \(view)")
                let kept = try fixture.chunkEntries(view)
                try fixture.rebuildChunks(view)
                #expect(kept == (try fixture.chunkEntries(view)), "round \(round) \(view): incremental chunks differ from a rebuild")
            }
        }
    }

    // A JavaScript reduce's exception only nulls its reduction (views.js): `"fatal_error"` fails the query.
    @Test("A reduce error stored in a chunk fails the query as a walk does; ranges without the row still reduce")
    func storedErrors() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.loadDesignDocuments(from: directory.file("e.json", contents: #"""
            {"_id": "_design/e", "views": {
              "js": {"map": "function (doc) { emit(doc.n, doc.v); }",
                     "reduce": "function (keys, values) { for (var i = 0; i < values.length; i++) if (values[i] < 0) throw 'fatal_error'; return sum(values); }"},
              "sum": {"map": "function (doc) { emit(doc.n, doc.v); }", "reduce": "_sum"}
            }}
            """#))
        let lines = (0..<2000).map { n in #"{"_id": "n\#(n)", "n": \#(n), "v": \#(n == 1500 ? "-1" : "1")}"# }
        _ = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        _ = try db.importDocuments(Data(#"{"_id": "text", "n": 1700, "v": "x"}"#.utf8))
        for view in ["js", "sum"] {
            func both(_ parameters: [(String, String)]) throws -> [String] {
                try [true, false].map { stored in try queryOutcome(db, "e", view, parameters, storedReductions: stored) }
            }
            let full = try both([])
            #expect(full[0] == full[1])
            #expect(full[0] != #"{"rows":[{"key":null,"value":2000}]}"#)
            let clean = try both([("endkey", "1000")])
            #expect(clean[0] == clean[1])
            #expect(clean[0] == #"{"rows":[{"key":null,"value":1001}]}"#)
        }
    }
}
