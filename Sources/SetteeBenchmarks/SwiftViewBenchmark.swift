import Foundation
import Settee

/// The benchmark's one-view map written in Swift, built in the same run as
/// the JavaScript one: `if (doc.type === 'order') emit([doc.customer, doc.date], doc.total);`
/// — and the same pipeline with a map that emits nothing, which bounds what a
/// Swift view can reach.
enum SwiftViewBenchmark {
    struct ByCustomer: Indexer {
        let name = "by_customer_swift"
        let version = "1"

        func map(_ document: IndexedDocument, _ emit: Emitter) throws {
            guard document["type"] == "order" else { return }
            emit([document["customer"] ?? nil, document["date"] ?? nil], document["total"] ?? nil)
        }
    }

    struct NoRows: Indexer {
        let name = "no_rows_swift"
        let version = "1"

        func map(_ document: IndexedDocument, _ emit: Emitter) throws {}
    }

    /// Builds each view's index alone and adds its rate, against `javaScriptRate` (docs/s).
    static func run(_ db: Database, documentCount: Int, javaScriptRate: Double, workers: Int, into table: inout Table) throws {
        for (indexer, label) in [(ByCustomer() as any Indexer, "index build, one view in Swift (Indexer)"),
                                 (NoRows(), "index build, a Swift view emitting nothing (pipeline bound)")] {
            try db.register(indexer)
            let (time, cpu) = try Benchmark.measureCPU {
                _ = try db.query(indexer.name, options: ViewQueryOptions(limit: 0))
            }
            let swiftRate = Double(documentCount) / (time / .seconds(1))
            table.add("\(label) (\(workers) workers)",
                      Benchmark.rate(documentCount, time, cpu: cpu) + String(format: "  = %.2f × the JavaScript build", swiftRate / javaScriptRate))
            db.unregister(indexer.name)
        }
    }
}
