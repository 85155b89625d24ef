import Foundation
import Settee

/// `--import-only DIR`: the bulk import alone, of `--docs` generated
/// documents kept as NDJSON in DIR between runs (written there when DIR holds
/// none), into a new database each run. Without the other figures a run is
/// short enough for `perf stat -e instructions:u` or `valgrind
/// --tool=callgrind`, whose instruction counts do not depend on the machine's
/// load.
enum ImportOnlyBenchmark {
    static func run(in directory: URL, documentCount: Int, runs: Int) throws {
        let file = directory.appendingPathComponent("docs-\(documentCount).ndjson")
        if !FileManager.default.fileExists(atPath: file.path) {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try GeneratedCorpus(count: documentCount).ndjson().write(to: file)
            print("wrote \(documentCount) documents to \(file.path)")
        }
        for run in 0..<runs {
            let databaseDirectory = directory.appendingPathComponent("db-\(getpid())-\(run)")
            defer { try? FileManager.default.removeItem(at: databaseDirectory) }
            // A map of 4 GiB, not 64: valgrind cannot reserve that much address space.
            var options = Database.Options()
            options.initialMapSize = 4 << 30
            let db = try Database(at: databaseDirectory, options: options)
            let (time, cpu) = try Benchmark.measureCPU {
                let report = try db.importDocuments(from: file)
                precondition(report.imported == documentCount && report.rejected.isEmpty, "import failed: \(report.rejected.prefix(3))")
            }
            print("bulk import (NDJSON file → LMDB): \(Benchmark.rate(documentCount, time, cpu: cpu))")
        }
    }
}
