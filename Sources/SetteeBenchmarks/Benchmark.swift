import Foundation
import Synchronization
import Logging
import Settee

/// `make bench`: one table of Settee's figures on generated documents —
/// import, `info` and `_all_docs`' first row, index builds against the
/// engine's own upper bound measured in the same run, incremental update,
/// lookups, ranges and full-range reductions, and puts while a JavaScript
/// reduce is kept up.
@main
struct Benchmark {
    static func main() throws {
        var documentCount = 1_000_000
        var workerCount = ProcessInfo.processInfo.activeProcessorCount
        var queryRuns = 5000
        var attachmentMegabytes: Int?
        var arguments = CommandLine.arguments.dropFirst()
        var wakeUpOnly = false
        var findOnly = false
        var queryOnlyDirectory: URL?
        var queryOnlyKind: String?
        var importOnlyDirectory: URL?
        var importRuns = 1
        var buildOnlyDirectory: URL?
        var updateCount: Int?
        var changedCount = 0
        while let argument = arguments.popFirst() {
            switch argument {
            case "--put-and-report":
                // The other process of the wake-up figures.
                return try WakeUpBenchmark.putAndReport(database: arguments.popFirst() ?? "", id: arguments.popFirst() ?? "")
            case "--wake-up": wakeUpOnly = true
            case "--find-only": findOnly = true
            case "--docs": documentCount = Int(arguments.popFirst() ?? "") ?? documentCount
            case "--workers": workerCount = Int(arguments.popFirst() ?? "") ?? workerCount
            case "--query-runs": queryRuns = Int(arguments.popFirst() ?? "") ?? queryRuns
            case "--attachments": attachmentMegabytes = Int(arguments.popFirst() ?? "") ?? 200
            case "--updates": updateCount = Int(arguments.popFirst() ?? "") ?? 100_000
            case "--query-only": queryOnlyDirectory = URL(fileURLWithPath: arguments.popFirst() ?? "settee-query-bench")
            case "--only": queryOnlyKind = arguments.popFirst()
            case "--import-only": importOnlyDirectory = URL(fileURLWithPath: arguments.popFirst() ?? "settee-import-bench")
            case "--runs": importRuns = Int(arguments.popFirst() ?? "") ?? importRuns
            case "--build-only": buildOnlyDirectory = URL(fileURLWithPath: arguments.popFirst() ?? "settee-build-bench")
            case "--changed": changedCount = Int(arguments.popFirst() ?? "") ?? 0
            default:
                print("usage: SetteeBenchmarks [--docs N] [--workers N] [--query-runs N (lookups and ranges, default 5000)] [--wake-up (only the wake-up figures)] [--find-only (only: the find figures, no JavaScript)] [--attachments MB (only: put and get one attachment of MB megabytes)] [--updates N (only: N documents updated five times)] [--query-only DIR [--only lookups|ranges|find-equality|find-repeated|find-range|find-parsed|find-again|find-raw|find-first|find-created|find-none|none] (only: lookups and ranges on a database kept in DIR, built there first when missing)] [--import-only DIR [--runs N] (only: the bulk import of an NDJSON file kept in DIR, N times)] [--build-only DIR [--only js|json] [--changed N] (only: the one-view JavaScript build and the one-field JSON index build, on copies of a database kept in DIR; then N documents changed and the index updated)]")
                return
            }
        }
        if let importOnlyDirectory {
            return try ImportOnlyBenchmark.run(in: importOnlyDirectory, documentCount: documentCount, runs: importRuns)
        }
        if let buildOnlyDirectory {
            return try BuildOnlyBenchmark.run(in: buildOnlyDirectory, documentCount: documentCount, only: queryOnlyKind, changed: changedCount)
        }
        if let queryOnlyDirectory {
            return try QueryOnlyBenchmark.run(in: queryOnlyDirectory, documentCount: documentCount, queryRuns: queryRuns, only: queryOnlyKind)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settee-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        if let updateCount { return try UpdateBenchmark.run(count: updateCount, in: directory) }
        if findOnly { return try FindOnlyBenchmark.run(in: directory, documentCount: documentCount, queryRuns: min(queryRuns, 2000)) }
        if let attachmentMegabytes {
            try AttachmentBenchmark.run(megabytes: attachmentMegabytes, in: directory)
            return
        }

        if wakeUpOnly {
            var table = Table()
            try WakeUpBenchmark.run(in: directory, idleSeconds: 10, into: &table)
            table.print()
            return
        }
        print("Settee benchmark: \(documentCount) generated documents, \(workerCount) JavaScript workers, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        var table = Table()
        let file = directory.appendingPathComponent("docs.ndjson")
        let oneView = "function (doc) { if (doc.type === 'order') emit([doc.customer, doc.date], doc.total); }"

        // The pure-engine upper bound: the same map function over the same documents, no storage.
        var upperBound = 0.0
        do {
            let corpus = GeneratedCorpus(count: documentCount)
            try corpus.ndjson().write(to: file)
            print("average document: \(corpus.bytes.count / documentCount) bytes")
            for workers in Set([1, workerCount]).sorted() {
                let (time, cpu) = try mapOnly(corpus, function: oneView, workers: workers)
                table.add("engine upper bound: map only, \(workers) worker\(workers == 1 ? "" : "s")", rate(documentCount, time, cpu: cpu))
                if workers == workerCount { upperBound = Double(documentCount) / (time / .seconds(1)) }
            }
        }

        let log = IndexedLog()
        let db = try Database(at: directory.appendingPathComponent("db"), logger: log.logger())
        let (importTime, importCPU) = try measureCPU {
            let report = try db.importDocuments(from: file)
            precondition(report.imported == documentCount && report.rejected.isEmpty, "import failed: \(report.rejected.prefix(3))")
        }
        try? FileManager.default.removeItem(at: file)
        table.add("bulk import (NDJSON file → LMDB)", rate(documentCount, importTime, cpu: importCPU))

        // The counts kept with the documents: the same cost at any corpus size,
        // shown against a database a tenth the size, measured in the same run.
        let smallCount = max(1, documentCount / 10)
        let smallDirectory = directory.appendingPathComponent("small-db")
        do {
            let smallFile = directory.appendingPathComponent("small.ndjson")
            try GeneratedCorpus(count: smallCount).ndjson().write(to: smallFile)
            let small = try Database(at: smallDirectory)
            _ = try small.importDocuments(from: smallFile)
            try? FileManager.default.removeItem(at: smallFile)
            try measureCounts(small, documentCount: smallCount, into: &table)
        }
        try? FileManager.default.removeItem(at: smallDirectory)
        try measureCounts(db, documentCount: documentCount, into: &table)

        // find with no index: a scan of every document, each read, parsed and
        // matched; the selector matches none, so all are examined.
        do {
            let request = FindRequest(selector: ["type": "contact", "city": "Oslo", "name": ["$beginsWith": "Nobody"]])
            var examined = 0
            let (time, cpu) = try measureCPU { examined = try findExamining(db, request) }
            precondition(examined == documentCount, "the scan examined \(examined) documents")
            table.add("find without an index (full scan, 3 conditions)", rate(documentCount, time, cpu: cpu))
        }

        // (a) One view, one emit per order.
        try design(#"{"_id":"_design/one","views":{"by_customer":{"map":"\#(oneView)"}}}"#, in: directory, db: db)
        var peak = PeakMemory()
        let (oneTime, oneCPU, oneTail) = try buildIndexes(db)
        let oneStages = stages(log.take())
        let onePeak = peak.megabytes()
        let oneRate = Double(documentCount) / (oneTime / .seconds(1))
        // The machine's speed drifts within a run: the build is compared with the
        // mean of the upper bound measured just before it and just after.
        do {
            let (time, cpu) = try mapOnly(GeneratedCorpus(count: documentCount), function: oneView, workers: workerCount)
            table.add("engine upper bound again, after the build", rate(documentCount, time, cpu: cpu))
            upperBound = (upperBound + Double(documentCount) / (time / .seconds(1))) / 2
        }
        table.add("index build, one view (\(workerCount) workers)", rate(documentCount, oneTime, cpu: oneCPU) + String(format: "  = %.2f × upper bound (mean of both)", oneRate / upperBound))
        table.add("  of which after the last batch was mapped", seconds(oneTail))
        table.add("  CPU by stage", oneStages)
        table.add("peak resident memory during that build", "\(onePeak) MB")
        // The same view written in Swift, built alone, against the JavaScript build's rate.
        try SwiftViewBenchmark.run(db, documentCount: documentCount, javaScriptRate: oneRate, workers: workerCount, into: &table)
        // find: a one-field JSON index built against the same rate, then queries that use it.
        try FindBenchmark.run(db, documentCount: documentCount, javaScriptRate: oneRate, runs: min(queryRuns, 2000), into: &table)

        // (b) Three views, one row per document each, with _count, _sum and a JS sum.
        try design(#"""
            {"_id":"_design/three","views":{
              "count":{"map":"function (doc) { emit(doc._id, null); }","reduce":"_count"},
              "total":{"map":"function (doc) { emit([doc.type, doc._id], doc.total || 1); }","reduce":"_sum"},
              "js_sum":{"map":"function (doc) { emit(doc.type, 1); }","reduce":"function (keys, values, rereduce) { return sum(values); }"}}}
            """#, in: directory, db: db)
        peak = PeakMemory()
        let (threeTime, threeCPU, threeTail) = try buildIndexes(db)
        let threeStages = stages(log.take())
        let threePeak = peak.megabytes()
        table.add("index build, design doc of three views", rate(documentCount, threeTime, cpu: threeCPU) + "  (peak \(threePeak) MB)")
        table.add("  of which after the last batch was mapped", seconds(threeTail))
        table.add("  CPU by stage", threeStages)

        // Incremental: change one document, then query (the index catches up first).
        var generator = SplitMix64(seed: 7)
        var incremental: [Duration] = []
        var puts: [Duration] = []
        var catchUps: [Duration] = []
        var keyOptions = ViewQueryOptions()
        for _ in 0..<200 {
            let id = String(format: "doc%08d", Int(generator.next() % UInt64(documentCount)))
            let document = try db.document(id)!
            var members = try document.value.objectValue!
            members.removeAll { $0.key == "note" }
            members.append((key: "note", value: .string("edited \(generator.next())")))
            keyOptions.key = members.first { $0.key == "customer" }?.value ?? "cust-1"
            let json = JSONValue.object(members).jsonText
            let put = try measure { _ = try db.put(json) }
            let catchUp = try measure { _ = try db.query("one/by_customer", options: keyOptions) }
            puts.append(put)
            catchUps.append(catchUp)
            incremental.append(put + catchUp)
        }
        table.add("change one doc, then query (update=true)", percentiles(incremental))
        table.add("  of which the put (a durable commit)", percentiles(puts))
        table.add("  of which the query catching up", percentiles(catchUps))

        // Lookups and ranges on the up-to-date index: a first pass over keys the
        // build left out of memory (their pages fault in), then the same queries again.
        let queries = try lookupsAndRanges(db, documentCount: documentCount, count: queryRuns, generator: &generator)
        for pass in ["first pass", "again"] {
            var lookups: [Duration] = []
            var ranges: [Duration] = []
            for (lookup, range) in queries {
                lookups.append(try measure {
                    let result = try db.query("one/by_customer", options: lookup)
                    precondition(!result.rows.isEmpty, "no rows for \(lookup.key!)")
                })
                ranges.append(try measure {
                    let result = try db.query("one/by_customer", options: range)
                    precondition(!result.rows.isEmpty)
                })
            }
            table.add("key lookup (update=false, in process), \(pass)", percentiles(lookups))
            table.add("100-row range (update=false), \(pass)", percentiles(ranges))
        }

        var fullRange = ViewQueryOptions()
        fullRange.update = .false
        for (view, name) in [("count", "_count"), ("total", "_sum"), ("js_sum", "JS sum")] {
            var times: [Duration] = []
            var value = ""
            for _ in 0..<200 {
                times.append(try measure { value = try db.query("three/\(view)", options: fullRange).rows[0].valueJSON })
            }
            table.add("reduce, full range (\(documentCount) rows), \(name) = \(value.prefix(14))", percentiles(times))
        }
        // Puts while a JavaScript reduce is kept up: one thread edits documents so
        // that the view's chunks holding them need a reduce of 50 ms per call
        // (values of a million and more), and brings the index up after each;
        // meanwhile this thread puts other documents (rows the view already has).
        try design(#"""
            {"_id":"_design/slowreduce","views":{"total":{"map":"function (doc) { emit(doc._id, doc.weight || 1); }",
              "reduce":"function (keys, values, rereduce) { var total = sum(values); if (total >= 1000000) { var end = Date.now() + 50; while (Date.now() < end) {} } return total; }"}}}
            """#, in: directory, db: db)
        let catchUp = try ViewQueryOptions(parameters: [("reduce", "false"), ("limit", "0")])
        _ = try db.query("slowreduce/total", options: catchUp)
        let maintaining = MaintenanceProgress()
        let heavyIDs = (0..<20).map { _ in String(format: "doc%08d", Int(generator.next() % UInt64(documentCount))) }
        let maintainer = Thread { [catchUp] in
            let start = ContinuousClock.now
            for id in heavyIDs {
                guard var members = try? db.document(id)?.value.objectValue else { continue }
                members.removeAll { $0.key == "weight" }
                members.append((key: "weight", value: 1_000_000))
                _ = try? db.put(JSONValue.object(members).jsonText)
                _ = try? db.query("slowreduce/total", options: catchUp)
            }
            maintaining.finish(ContinuousClock.now - start)
        }
        maintainer.start()
        var lightPuts: [Duration] = []
        while !maintaining.isDone {
            let id = String(format: "doc%08d", Int(generator.next() % UInt64(documentCount)))
            guard !heavyIDs.contains(id), var members = try db.document(id)?.value.objectValue else { continue }
            members.removeAll { $0.key == "note" }
            members.append((key: "note", value: .string("light \(generator.next())")))
            let json = JSONValue.object(members).jsonText
            lightPuts.append(try measure { _ = try db.put(json) })
            Thread.sleep(forTimeInterval: 0.005)
        }
        table.add("put latency while a JS reduce is being maintained", percentiles(lightPuts) + "  (20 updates in \(seconds(maintaining.elapsed)))")

        // Last, as it leaves the file out of memory: the one view again (its source
        // differs by a comment: a new index), with the data file's pages evicted
        // first, as after a restart.
        try design(#"{"_id":"_design/cold","views":{"by_customer":{"map":"\#(oneView) // again"}}}"#, in: directory, db: db)
        let evicted = evictFromPageCache(directory.appendingPathComponent("db/data.mdb"))
        let faultsBefore = majorFaults()
        var firstRow = ViewQueryOptions()
        firstRow.limit = 1
        // The query builds this design document's index alone (the others trail by the edits above).
        let (coldTime, coldCPU) = try measureCPU { _ = try db.query("cold/by_customer", options: firstRow) }
        table.add("index build, one view, data file evicted first",
                  rate(documentCount, coldTime, cpu: coldCPU) + (evicted ? "  (\(majorFaults() - faultsBefore) disk reads waited for)" : "  (the file could not be evicted)"))
        try WakeUpBenchmark.run(in: directory, idleSeconds: 5, into: &table)
        table.add("peak resident memory (whole run)", "\(PeakMemory.processPeakMegabytes()) MB")
        table.print()
    }

    /// `info` and `_all_docs`' first row, 1,000 times each: read from the
    /// counts kept with the documents, not by walking them.
    static func measureCounts(_ db: Database, documentCount: Int, into table: inout Table) throws {
        var infos: [Duration] = []
        var firstDocuments: [Duration] = []
        var firstDocument = ViewQueryOptions()
        firstDocument.limit = 1
        for _ in 0..<1000 {
            var info: DatabaseInfo?
            var firstRows: ViewResult?
            infos.append(try measure { info = try db.info() })
            firstDocuments.append(try measure { firstRows = try db.allDocuments(options: firstDocument) })
            precondition(info?.documentCount == documentCount && firstRows?.totalRows == documentCount)
        }
        table.add("info, \(documentCount) docs (in process)", percentiles(infos))
        table.add("all-docs --limit 1, total_rows \(documentCount) (in process)", percentiles(firstDocuments))
    }

    static func design(_ json: String, in directory: URL, db: Database) throws {
        let file = directory.appendingPathComponent("design.json")
        try Data(json.utf8).write(to: file)
        try db.loadDesignDocuments(from: file)
    }

    /// `count` key lookups (an existing order's `[customer, date]`) and
    /// 100-row ranges (from its customer) on the one-view index, without
    /// updating it, chosen by `generator`.
    static func lookupsAndRanges(_ db: Database, documentCount: Int, count: Int,
                                 generator: inout SplitMix64) throws -> [(lookup: ViewQueryOptions, range: ViewQueryOptions)] {
        var options = ViewQueryOptions()
        options.update = .false
        var queries: [(lookup: ViewQueryOptions, range: ViewQueryOptions)] = []
        for _ in 0..<count {
            var document = try db.document(String(format: "doc%08d", Int(generator.next() % UInt64(documentCount))))!
            while try document.value["type"] != "order" {
                document = try db.document(String(format: "doc%08d", Int(generator.next() % UInt64(documentCount))))!
            }
            let value = try document.value
            var lookup = options
            lookup.key = [value["customer"]!, value["date"]!]
            var range = options
            range.startKey = [value["customer"]!]
            range.limit = 100
            queries.append((lookup, range))
        }
        return queries
    }

    /// Runs `request` with execution statistics: the documents it examined.
    static func findExamining(_ db: Database, _ request: FindRequest) throws -> Int {
        var request = request
        request.executionStats = true
        return try db.find(request).executionStats?.totalDocsExamined ?? 0
    }

    static func mapOnly(_ corpus: GeneratedCorpus, function: String, workers: Int) throws -> (Duration, cpu: Double) {
        let pool = try JavaScriptWorkerPool(count: workers)
        var rows = 0
        let time = try measureCPU {
            rows = try pool.runOnEach { index, context in
                let functions = [try context.compile(function)]
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
        return time
    }

    static func measure(_ body: () throws -> Void) rethrows -> Duration {
        let start = ContinuousClock.now
        try body()
        return ContinuousClock.now - start
    }

    /// Brings every index up to date, timed; `tail` is the part after the
    /// last batch of documents was mapped (the writes and the chunks that
    /// nothing overlaps).
    static func buildIndexes(_ db: Database) throws -> (Duration, cpu: Double, tail: Duration) {
        var lastMapped: ContinuousClock.Instant?
        var end = ContinuousClock.now
        let (time, cpu) = try measureCPU {
            // Merge progress (a new index's sorted runs) comes after the last batch.
            try db.updateIndexes { progress in if progress.toMerge == 0 { lastMapped = .now } }
            end = .now
        }
        return (time, cpu, lastMapped.map { end - $0 } ?? .zero)
    }

    /// The CPU seconds of each stage of an index update, from the metadata of
    /// its "indexed" log line.
    static func stages(_ metadata: Logger.Metadata?) -> String {
        guard let metadata else { return "(not logged)" }
        let seconds = ["mapping", "reading", "gathering", "writing", "reducing", "other"].map { stage in
            "\(stage) " + String(format: "%.2f s", Double(metadata["cpu.\(stage)"]?.description ?? "") ?? .nan)
        }
        return seconds.joined(separator: ", ")
    }

    /// A duration as seconds, two decimals.
    static func seconds(_ duration: Duration) -> String {
        String(format: "%.2f s", duration / .seconds(1))
    }

    /// The wall-clock time of `body`, and the CPU time (user and system, all
    /// threads) the process spent meanwhile: on shared cores the second
    /// varies far less from run to run than the first.
    static func measureCPU(_ body: () throws -> Void) rethrows -> (Duration, cpu: Double) {
        let before = cpuSeconds()
        let time = try measure(body)
        return (time, cpuSeconds() - before)
    }

    /// Drops the file's pages from the page cache (those no process maps).
    static func evictFromPageCache(_ file: URL) -> Bool {
        sync()
        let descriptor = open(file.path, O_RDONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) == 0
    }

    /// Page faults of this process that waited for the disk.
    static func majorFaults() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_majflt
    }

    /// Page faults of this process that found the page in memory (a page of
    /// the map touched for the first time, or again after it was released).
    static func minorFaults() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_minflt
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }

    static func rate(_ count: Int, _ time: Duration, cpu: Double) -> String {
        let seconds = time / .seconds(1)
        return "\(Int(Double(count) / seconds)) docs/s  (\(String(format: "%.2f", seconds)) s, \(String(format: "%.2f", cpu)) s CPU)"
    }

    /// The median of `times` (as ``percentiles(_:)`` reports it), in seconds.
    static func median(_ times: [Duration]) -> Double {
        times.sorted()[times.count / 2] / .seconds(1)
    }

    static func percentiles(_ times: [Duration]) -> String {
        let sorted = times.sorted()
        func micros(_ fraction: Double) -> String {
            String(format: "%.1f", sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] / .microseconds(1))
        }
        return "p50 \(micros(0.5)) µs, p99 \(micros(0.99)) µs  (\(times.count) runs)"
    }
}

/// When the thread keeping a JavaScript reduce up has finished, and how long it took.
final class MaintenanceProgress: Sendable {
    private let state = Mutex<Duration?>(nil)

    var isDone: Bool { state.withLock { $0 != nil } }
    var elapsed: Duration { state.withLock { $0 ?? .zero } }

    func finish(_ elapsed: Duration) { state.withLock { $0 = elapsed } }
}

/// The figures, printed as one aligned table.
struct Table {
    private var rows: [(String, String)] = []

    mutating func add(_ name: String, _ value: String) {
        rows.append((name, value))
        Swift.print("  \(name): \(value)")
    }

    func print() {
        let width = rows.map(\.0.count).max() ?? 0
        Swift.print("")
        for (name, value) in rows {
            Swift.print(name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value)
        }
    }
}

/// The process's peak resident memory from now on (Linux resets the
/// high-water mark when 5 is written to /proc/self/clear_refs).
struct PeakMemory {
    /// The resident memory when the measure began (the peak starts from it).
    let startMegabytes: Int

    init() {
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
        startMegabytes = Self.statusMegabytes("VmRSS:") ?? 0
    }

    /// The peak, and the resident memory it started from.
    func described() -> String {
        "\(megabytes()) MB (\(startMegabytes) MB resident when it began)"
    }

    /// A `/proc/self/status` figure given in kB, in megabytes.
    private static func statusMegabytes(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kilobytes / 1024
    }

    func megabytes() -> Int {
        Self.statusMegabytes("VmHWM:") ?? Self.processPeakMegabytes()
    }

    static func processPeakMegabytes() -> Int {
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
