import Foundation
import Settee

/// `make bench`: bulk import and map-only throughput on generated documents.
@main
struct Benchmark {
    static func main() throws {
        var documentCount = 1_000_000
        var workerCount = ProcessInfo.processInfo.activeProcessorCount
        var skipImport = false
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--docs": documentCount = Int(arguments.popFirst() ?? "") ?? documentCount
            case "--workers": workerCount = Int(arguments.popFirst() ?? "") ?? workerCount
            case "--map-only": skipImport = true
            default:
                print("usage: SetteeBenchmarks [--docs N] [--workers N] [--map-only]")
                return
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settee-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        print("Settee benchmark: \(documentCount) generated documents, \(workerCount) JavaScript workers, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let corpus = GeneratedCorpus(count: documentCount)
        let file = directory.appendingPathComponent("docs.ndjson")
        try corpus.ndjson().write(to: file)
        print("average document: \(corpus.bytes.count / documentCount) bytes")
        var table: [(String, String)] = []
        let map = "function (doc) { if (doc.type === 'order') emit([doc.customer, doc.date], doc.total); }"

        // Bulk import.
        if !skipImport {
            let db = try Database(at: directory.appendingPathComponent("db"))
            let importTime = try measure {
                let report = try db.importDocuments(from: file)
                precondition(report.imported == documentCount && report.rejected.isEmpty, "import failed: \(report.rejected.prefix(3))")
            }
            table.append(("bulk import (NDJSON file → LMDB)", rate(documentCount, importTime)))

            // Full index build of one view, end to end (read, map on all workers, collate, write).
            let design = directory.appendingPathComponent("bench.json")
            try Data(#"{"_id":"_design/bench","views":{"by_customer":{"map":"\#(map)"}}}"#.utf8).write(to: design)
            try db.loadDesignDocuments(from: design)
            let buildTime = try measure { try db.updateIndexes() }
            table.append(("index build, one view (\(workerCount) workers)", rate(documentCount, buildTime)))
            var keyOptions = ViewQueryOptions()
            keyOptions.key = ["cust-123", "2024-05-05"]
            keyOptions.update = .false
            let lookups = 2000
            let lookupTime = try measure { for _ in 0..<lookups { _ = try db.query("bench/by_customer", options: keyOptions) } }
            table.append(("key lookup (update=false)", String(format: "%.1f µs per query", lookupTime / .microseconds(1) / Double(lookups))))
        }

        // Map-only: the engine alone, the same map function, no storage.
        for workers in Set([1, workerCount]).sorted() {
            let pool = try JavaScriptWorkerPool(count: workers)
            var rows = 0
            let time = try measure {
                rows = try pool.runOnEach { index, context in
                    let functions = [try context.compile(map)]
                    var rows = 0
                    for document in stride(from: index, to: corpus.count, by: workers) {
                        try corpus.withDocument(document) { bytes in
                            _ = try context.map(bytes, functions: functions).forEach(
                                rows: { _, _, _ in rows += 1 }, failure: { _, error in throw error })
                        }
                    }
                    return rows
                }.reduce(0, +)
            }
            precondition(rows > 0)
            table.append(("map-only, \(workers) worker\(workers == 1 ? "" : "s") (\(rows) rows)", rate(documentCount, time)))
        }
        table.append(("peak resident memory", "\(peakResidentMegabytes()) MB"))

        let width = table.map(\.0.count).max() ?? 0
        print("")
        for (name, value) in table {
            print(name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value)
        }
    }

    static func measure(_ body: () throws -> Void) rethrows -> Duration {
        let start = ContinuousClock.now
        try body()
        return ContinuousClock.now - start
    }

    static func rate(_ count: Int, _ time: Duration) -> String {
        let seconds = time / .seconds(1)
        return "\(Int(Double(count) / seconds)) docs/s  (\(String(format: "%.2f", seconds)) s)"
    }

    static func peakResidentMegabytes() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss / 1024
    }
}

/// Deterministic documents of about 450 bytes: orders, contacts and notes.
final class GeneratedCorpus: Sendable {
    let count: Int
    let bytes: [UInt8]
    let offsets: [Int]

    init(count: Int) {
        var generator = SplitMix64(seed: 42)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 470)
        var offsets = [0]
        offsets.reserveCapacity(count + 1)
        let cities = ["Amsterdam", "Berlin", "Lisbon", "Zürich", "Oslo", "Kraków", "Lyon", "Ghent"]
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
        for n in 0..<count {
            let kind = generator.next() % 10
            let id = String(format: "doc%08d", n)
            var text: String
            func word() -> String { words[Int(generator.next() % UInt64(words.count))] }
            let note = (0..<12).map { _ in word() }.joined(separator: " ")
            if kind < 6 {
                let items = (0..<(1 + Int(generator.next() % 3))).map { _ in
                    #"{"sku":"SKU-\#(generator.next() % 500)","qty":\#(1 + generator.next() % 5),"price":\#(Double(generator.next() % 20000) / 100)}"#
                }.joined(separator: ",")
                text = #"{"_id":"\#(id)","type":"order","customer":"cust-\#(generator.next() % 50_000)","date":"20\#(20 + generator.next() % 7)-\#(String(format: "%02d", 1 + generator.next() % 12))-\#(String(format: "%02d", 1 + generator.next() % 28))","status":"paid","total":\#(Double(generator.next() % 100_000) / 100),"items":[\#(items)],"note":"\#(note)"}"#
            } else if kind < 9 {
                text = #"{"_id":"\#(id)","type":"contact","name":"\#(word().capitalized) \#(word().capitalized)","city":"\#(cities[Int(generator.next() % 8)])","phones":["+31 \#(generator.next() % 1_000_000_000)"],"email":"\#(word())@example.org","tags":["\#(word())","\#(word())"],"note":"\#(note)"}"#
            } else {
                text = #"{"_id":"\#(id)","type":"note","title":"\#(word()) \#(word())","body":"\#(note) \#(note)","created":\#(1_700_000_000 + generator.next() % 10_000_000)}"#
            }
            // Pad to the target size with a field views ignore.
            let padding = max(0, 450 - text.utf8.count)
            text.removeLast()
            text += #","pad":"\#(String(repeating: "x", count: padding))"}"#
            bytes.append(contentsOf: text.utf8)
            offsets.append(bytes.count)
        }
        self.count = count
        self.bytes = bytes
        self.offsets = offsets
    }

    func withDocument<T>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[offsets[index]..<offsets[index + 1]])) }
    }

    func ndjson() -> Data {
        var data = Data(capacity: bytes.count + count)
        for index in 0..<count {
            data.append(contentsOf: bytes[offsets[index]..<offsets[index + 1]])
            data.append(0x0A)
        }
        return data
    }
}

struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
