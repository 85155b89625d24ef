import Foundation
import Settee

/// `--query-only DIR`: key lookups and 100-row ranges on the one-view index
/// alone, on a database kept in DIR between runs (built there, with `--docs`
/// documents, when DIR holds none). Without the import and the build, a run
/// is short enough for `valgrind --tool=callgrind`, whose instruction counts
/// do not depend on the machine's load. `only` runs one kind of query
/// (`lookups`, `ranges`; `find-equality`, `find-repeated`, `find-range`, `find-parsed`, `find-again` (each equality twice, the second timed), `find-raw` (the documents of each equality read by id from LMDB alone, after one find of each), `find-first` (other equalities' documents read so, first), `find-created`: the
/// full benchmark's `find` queries, on its one-field JSON index, made here
/// when missing, against `find-none`) or `none`: a query's instructions are the difference
/// between a run of one kind and a run of none, divided by the runs.
enum QueryOnlyBenchmark {
    static func run(in directory: URL, documentCount: Int, queryRuns: Int, only: String?) throws {
        let databaseDirectory = directory.appendingPathComponent("db")
        if !FileManager.default.fileExists(atPath: databaseDirectory.path) {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("docs.ndjson")
            try GeneratedCorpus(count: documentCount).ndjson().write(to: file)
            let db = try Database(at: databaseDirectory)
            _ = try db.importDocuments(from: file)
            try? FileManager.default.removeItem(at: file)
            let oneView = "function (doc) { if (doc.type === 'order') emit([doc.customer, doc.date], doc.total); }"
            try Benchmark.design(#"{"_id":"_design/one","views":{"by_customer":{"map":"\#(oneView)"}}}"#, in: directory, db: db)
            try db.updateIndexes()
            print("built \(documentCount) documents and the index in \(databaseDirectory.path)")
        }
        // A map of 4 GiB, not 64: valgrind cannot reserve that much address space.
        var options = Database.Options()
        options.initialMapSize = 4 << 30
        let db = try Database(at: databaseDirectory, options: options)
        let documentCount = try db.info().documentCount
        if let only, only.hasPrefix("find") || only == "none" {
            // The index made and built once; then a find first, in every kind of run.
            if try db.createIndex(IndexRequest(json: FindBenchmark.index)).result == "created" { try db.updateIndexes() }
            _ = try db.find(FindBenchmark.requests(count: 1)[0].equality)
        }
        if let only, only.hasPrefix("find-") {
            for (name, figures) in try FindBenchmark.measureQueries(db, runs: queryRuns, kinds: [String(only.dropFirst(5))]) {
                print("\(name): \(figures)")
            }
            return
        }
        // The same choice of keys as the full benchmark's.
        var generator = SplitMix64(seed: 7)
        let queries = try Benchmark.lookupsAndRanges(db, documentCount: documentCount, count: queryRuns, generator: &generator)
        // One query first in every kind of run, `none` too: the first compiles the design document.
        if let first = queries.first { try lookup(db, first.lookup) }
        var lookups: [Duration] = []
        var ranges: [Duration] = []
        for (lookupOptions, rangeOptions) in queries {
            if only == nil || only == "lookups" { lookups.append(try Benchmark.measure { try lookup(db, lookupOptions) }) }
            if only == nil || only == "ranges" { ranges.append(try Benchmark.measure { try range(db, rangeOptions) }) }
        }
        if !lookups.isEmpty { print("key lookup (update=false): \(Benchmark.percentiles(lookups))") }
        if !ranges.isEmpty { print("100-row range (update=false): \(Benchmark.percentiles(ranges))") }
    }

    @inline(never)
    static func lookup(_ db: Database, _ options: ViewQueryOptions) throws {
        let result = try db.query("one/by_customer", options: options)
        precondition(!result.rows.isEmpty, "no rows for \(options.key!)")
    }

    @inline(never)
    static func range(_ db: Database, _ options: ViewQueryOptions) throws {
        let result = try db.query("one/by_customer", options: options)
        precondition(result.rows.count == 100 || result.rows.count == result.totalRows! - result.offset!)
    }
}
