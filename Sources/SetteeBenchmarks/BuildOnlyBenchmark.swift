import Foundation
import Settee

/// `--build-only DIR [--only js|json]`: the full benchmark's one-view
/// JavaScript build and its one-field JSON index build, each on a fresh copy
/// of a database of `--docs` documents kept in DIR between runs (imported
/// there when DIR holds none), and the ratio of their rates. Without the
/// import, a run with `--only json` is short enough for
/// `valgrind --tool=callgrind`, whose instruction counts do not depend on
/// the machine's load.
enum BuildOnlyBenchmark {
    static func run(in directory: URL, documentCount: Int, only: String?) throws {
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
        }
        if let js = rates["js"], let json = rates["json"] {
            print(String(format: "JSON index / JavaScript: %.2f ×", json / js))
        }
    }
}
