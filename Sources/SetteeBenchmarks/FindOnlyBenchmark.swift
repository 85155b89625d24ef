import Foundation
import Settee

/// `--find-only`: the full benchmark's `find` figures alone, as it measures
/// them: `--docs` generated documents imported into a new database, the scan
/// without an index, the one-field JSON index built, then its queries, in one
/// process (no JavaScript).
enum FindOnlyBenchmark {
    static func run(in directory: URL, documentCount: Int, queryRuns: Int) throws {
        print("Settee find benchmark: \(documentCount) generated documents")
        var table = Table()
        let file = directory.appendingPathComponent("docs.ndjson")
        try GeneratedCorpus(count: documentCount).ndjson().write(to: file)
        let db = try Database(at: directory.appendingPathComponent("db"))
        let (importTime, importCPU) = try Benchmark.measureCPU {
            let report = try db.importDocuments(from: file)
            precondition(report.imported == documentCount && report.rejected.isEmpty, "import failed: \(report.rejected.prefix(3))")
        }
        try? FileManager.default.removeItem(at: file)
        table.add("bulk import (NDJSON file → LMDB)", Benchmark.rate(documentCount, importTime, cpu: importCPU))
        let request = FindRequest(selector: ["type": "contact", "city": "Oslo", "name": ["$beginsWith": "Nobody"]])
        var examined = 0
        let (time, cpu) = try Benchmark.measureCPU { examined = try Benchmark.findExamining(db, request) }
        precondition(examined == documentCount, "the scan examined \(examined) documents")
        table.add("find without an index (full scan, 3 conditions)", Benchmark.rate(documentCount, time, cpu: cpu))
        try db.createIndex(IndexRequest(json: FindBenchmark.index))
        let peak = PeakMemory()
        let (buildTime, buildCPU) = try Benchmark.measureCPU { try db.updateIndexes() }
        table.add("index build, one-field JSON index for find", Benchmark.rate(documentCount, buildTime, cpu: buildCPU))
        table.add("peak resident memory during that build", peak.described())
        for (name, figures) in try FindBenchmark.measureQueries(db, runs: queryRuns) { table.add(name, figures) }
        table.print()
    }
}
