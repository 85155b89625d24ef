import Foundation
import Settee

/// `--build-only DIR [--only js|json]`: the full benchmark's one-view
/// JavaScript build and its one-field JSON index build, each on a fresh copy
/// of a database of `--docs` documents kept in DIR between runs (imported
/// there when DIR holds none), and the ratio of their rates. Without the
/// import, a run with `--only json` is short enough for
/// `valgrind --tool=callgrind`, whose instruction counts do not depend on
/// the machine's load. With `--changed N`, N documents spread over the
/// database are then written again (another customer, date and total) in one
/// transaction, and the index brought up to date: the update of an existing
/// index by a large change.
enum BuildOnlyBenchmark {
    static func run(in directory: URL, documentCount: Int, only: String?, changed: Int = 0) throws {
        let pristine = directory.appendingPathComponent("documents")
        if !FileManager.default.fileExists(atPath: pristine.path) {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("docs.ndjson")
            try GeneratedCorpus(count: documentCount).ndjson().write(to: file)
            let db = try Database(at: pristine)
            _ = try db.importDocuments(from: file)
            try? FileManager.default.removeItem(at: file)
            print("imported \(documentCount) documents into \(pristine.path)")
        }
        var rates: [String: Double] = [:]
        for kind in ["js", "json"] where only == nil || only == kind {
            let copy = directory.appendingPathComponent("build-\(getpid())-\(kind)")
            try? FileManager.default.removeItem(at: copy)
            try FileManager.default.copyItem(at: pristine, to: copy)
            defer { try? FileManager.default.removeItem(at: copy) }
            // A map of 4 GiB, not 64: valgrind cannot reserve that much address space.
            var options = Database.Options()
            options.initialMapSize = 4 << 30
            let log = IndexedLog()
            let db = try Database(at: copy, options: options, logger: log.logger())
            defer { db.close() }
            let count = try db.info().documentCount
            if kind == "js" {
                let oneView = "function (doc) { if (doc.type === 'order') emit([doc.customer, doc.date], doc.total); }"
                try Benchmark.design(#"{"_id":"_design/one","views":{"by_customer":{"map":"\#(oneView)"}}}"#, in: directory, db: db)
            } else {
                try db.createIndex(IndexRequest(json: FindBenchmark.index))
            }
            let peak = PeakMemory()
            let faults = Benchmark.minorFaults()
            let (time, cpu, tail) = try Benchmark.buildIndexes(db)
            let faulted = Benchmark.minorFaults() - faults
            rates[kind] = Double(count) / (time / .seconds(1))
            print("\(kind == "js" ? "one-view JavaScript build" : "one-field JSON index build"): "
                  + Benchmark.rate(count, time, cpu: cpu) + "  (peak \(peak.described()), \(faulted) page faults)")
            print("  of which after the last batch was mapped: " + Benchmark.seconds(tail))
            print("  CPU by stage: " + Benchmark.stages(log.take()))
            if changed > 0 {
                try change(changed, of: count, in: db)
                let peak = PeakMemory()
                let (time, cpu, _) = try Benchmark.buildIndexes(db)
                print("  then \(changed) documents changed, the index updated: " + Benchmark.rate(changed, time, cpu: cpu)
                      + "  (peak \(peak.described()))")
                print("  CPU by stage: " + Benchmark.stages(log.take()))
            }
        }
        if let js = rates["js"], let json = rates["json"] {
            print(String(format: "JSON index / JavaScript: %.2f ×", json / js))
        }
    }

    /// Writes `changed` of the database's `count` documents again, evenly
    /// spread, in one transaction: each an order of another customer.
    static func change(_ changed: Int, of count: Int, in db: Database) throws {
        let step = max(1, count / changed)
        var picked: [(id: String, revision: String)] = []
        var position = 0
        try db.forEachChange { change in
            if position % step == 0, picked.count < changed, !change.id.hasPrefix("_design/") {
                picked.append((change.id, change.revision.description))
            }
            position += 1
        }
        var generator = SplitMix64(seed: 99)
        try db.write { batch in
            for (id, revision) in picked {
                let customer = "cust-\(generator.next() % 50_000)"
                _ = try batch.put(#"{"_id":"\#(id)","_rev":"\#(revision)","type":"order","customer":"\#(customer)","date":"2026-11-27","total":\#(generator.next() % 1000)}"#)
            }
        }
    }
}
