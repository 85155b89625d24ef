import Foundation
import Settee

/// `--updates N`: the cost of updating documents, apart from creating them —
/// N documents written in one transaction, then each updated five times, a
/// transaction per round; the figure is for the updates only.
enum UpdateBenchmark {
    static func run(count: Int, in directory: URL) throws {
        let db = try Database(at: directory.appendingPathComponent("updates"))
        var revisions = try db.write { batch in
            try (0..<count).map { try batch.put(#"{"_id":"u\#($0)","round":0,"text":"an updated document"}"#).revision }
        }
        let rounds = 5
        let (time, cpu) = try Benchmark.measureCPU {
            for round in 1...rounds {
                let previous = revisions
                revisions = try db.write { batch in
                    try (0..<count).map {
                        try batch.put(#"{"_id":"u\#($0)","_rev":"\#(previous[$0])","round":\#(round),"text":"an updated document"}"#).revision
                    }
                }
            }
        }
        print("update, \(rounds) rounds of \(count) documents, a transaction per round: \(Benchmark.rate(count * rounds, time, cpu: cpu))")
    }
}
