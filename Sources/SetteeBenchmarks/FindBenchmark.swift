import Foundation
import Settee

/// `find` with a JSON index, on the benchmark's documents: the index on one
/// field (`customer`) built in the same run as the JavaScript one-view build,
/// then an equality and a range with `limit` 25, in process.
enum FindBenchmark {
    static func run(_ db: Database, documentCount: Int, javaScriptRate: Double, runs: Int, into table: inout Table) throws {
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["customer"]}, "ddoc": "bench-find", "name": "customer"}"#))
        var peak = PeakMemory()
        let (time, cpu) = try Benchmark.measureCPU { try db.updateIndexes() }
        let rate = Double(documentCount) / (time / .seconds(1))
        table.add("index build, one-field JSON index for find (no JavaScript)",
                  Benchmark.rate(documentCount, time, cpu: cpu) + String(format: "  = %.2f × the JavaScript one-view build", rate / javaScriptRate))
        table.add("peak resident memory during that build", "\(peak.megabytes()) MB")

        var generator = SplitMix64(seed: 7)
        var equality: [Duration] = []
        var range: [Duration] = []
        var found = 0
        for _ in 0..<runs {
            let customer = "cust-\(generator.next() % 50_000)"
            var request = FindRequest(selector: ["customer": .string(customer)])
            request.update = false
            equality.append(try Benchmark.measure { found += try db.find(request).documents.count })
            var ranged = FindRequest(selector: ["customer": ["$gt": .string(customer)]])
            ranged.update = false
            ranged.limit = 25
            range.append(try Benchmark.measure { found += try db.find(ranged).documents.count })
        }
        precondition(found > 0, "find found nothing")
        table.add("find by equality on an indexed field (in process)", Benchmark.percentiles(equality))
        table.add("find by range on an indexed field, limit 25 (in process)", Benchmark.percentiles(range))
    }
}
