import Foundation
import Testing
@testable import Settee

@Suite("Processes building the same index", .timeLimit(.minutes(10)), .ownThread)
struct ConcurrentIndexBuildTests {
    /// As CouchDB has one indexer per index: processes querying the same
    /// stale view at once must not each map every document (N times the
    /// CPU and memory of one build) — one builds, the others wait for it
    /// and answer from what it committed.
    @Test("Concurrent queries of a stale view map its documents once between them, and all answer in full")
    func oneBuilderAmongProcesses() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("db")
        let documents = 20_000
        do {
            let db = try Database(at: path)
            let lines = (0..<documents).map { #"{"_id": "d\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
            _ = try db.importDocuments(Data(lines.utf8))
            try db.loadDesignDocuments(from: directory.file("r.json", contents: #"""
                {"_id": "_design/r", "views": {"v": {"map": "function (doc) { emit(doc.n, null); }", "reduce": "_count"}}}
                """#))
        }
        let processes = 4
        let children = try (0..<processes).map { _ in
            try settee.start(["--db", path.path, "--verbose", "query", "r/v", "--reduce", "false", "--limit", "1"], in: directory.url)
        }
        let outcomes = try children.map { try $0.wait() }
        for outcome in outcomes {
            #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
            let result = try JSONValue(parsing: outcome.standardOutput)
            #expect(result["total_rows"] == .number(Double(documents)))
        }
        // Each build ends with an "indexed" line saying how many documents it mapped.
        let mapped = outcomes.flatMap { outcome in
            outcome.standardError.split(separator: "\n").filter { $0.contains("indexed") }.compactMap { line -> Int? in
                guard let range = line.range(of: #"documents=\d+"#, options: .regularExpression) else { return nil }
                return Int(line[range].dropFirst("documents=".count))
            }
        }
        #expect(mapped.reduce(0, +) <= documents + documents / 2, "documents mapped by each build: \(mapped)")
    }
}
