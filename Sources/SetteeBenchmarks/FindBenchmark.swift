import Foundation
import Settee
@_spi(LMDB) import SetteeStorage

/// `find` with a JSON index, on the benchmark's documents: the index on one
/// field (`customer`) built in the same run as the JavaScript one-view build,
/// then an equality and a range with `limit` 25, in process. An equality on
/// `created` (notes' creation times, nearly one document per value, on an
/// index of its own) shows what an equality costs apart from the documents
/// it returns: a customer has about 12 orders per million documents.
///
/// Each query is timed as a consumer of it works: the `find` call and the
/// response body it writes (``FindResult/jsonText``, what a server sends);
/// the range once more with every document read as a ``JSONValue`` instead.
/// The floor under an equality: the documents it returns, read by id
/// straight from LMDB in one read transaction (no `find`, no text made) —
/// those of other customers' equalities read so first, as the equalities'
/// own are read by their first `find`, then the equalities' own once `find`
/// has read them.
enum FindBenchmark {
    static let index = #"{"index": {"fields": ["customer"]}, "ddoc": "bench-find", "name": "customer"}"#
    static let createdIndex = #"{"index": {"fields": ["created"]}, "ddoc": "bench-find-created", "name": "created"}"#

    static func run(_ db: Database, documentCount: Int, javaScriptRate: Double, runs: Int, into table: inout Table) throws {
        try db.createIndex(IndexRequest(json: index))
        let peak = PeakMemory()
        let (time, cpu) = try Benchmark.measureCPU { try db.updateIndexes() }
        let rate = Double(documentCount) / (time / .seconds(1))
        table.add("index build, one-field JSON index for find (no JavaScript)",
                  Benchmark.rate(documentCount, time, cpu: cpu) + String(format: "  = %.2f × the JavaScript one-view build", rate / javaScriptRate))
        table.add("peak resident memory during that build", peak.described())
        for (name, figures) in try measureQueries(db, runs: runs) { table.add(name, figures) }
    }

    /// The equalities and ranges the benchmark runs: a random customer's, with `update` false.
    static func requests(count: Int, seed: UInt64 = 7) -> [(equality: FindRequest, range: FindRequest)] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            let customer = "cust-\(generator.next() % 50_000)"
            var equality = FindRequest(selector: ["customer": .string(customer)])
            equality.update = false
            var range = FindRequest(selector: ["customer": ["$gt": .string(customer)]])
            range.update = false
            range.limit = 25
            return (equality, range)
        }
    }

    /// Equalities on `created`, of values some note has, in random order
    /// (its index made and built first when missing).
    static func createdRequests(_ db: Database, count: Int) throws -> [FindRequest] {
        if try db.createIndex(IndexRequest(json: createdIndex)).result == "created" { try db.updateIndexes() }
        var all = FindRequest(selector: ["created": ["$gte": 0]])
        all.fields = ["created"]
        all.limit = .max
        all.update = false
        let values = try db.find(all).documents.compactMap { $0["created"] }
        precondition(!values.isEmpty, "no notes")
        var generator = SplitMix64(seed: 11)
        return (0..<count).map { _ in
            var request = FindRequest(selector: ["created": values[Int(generator.next() % UInt64(values.count))]])
            request.update = false
            return request
        }
    }

    /// The queries' figures, named.
    static func measureQueries(_ db: Database, runs: Int, kinds: Set<String> = ["first", "equality", "repeated", "range", "parsed", "again", "raw", "created"]) throws -> [(String, String)] {
        var equality: [Duration] = []
        var repeated: [Duration] = []
        var range: [Duration] = []
        var parsed: [Duration] = []
        // Page faults (minor: pages of the memory map already in the page cache) per kind.
        var faults: [String: Int] = [:]
        func counted(_ kind: String, _ body: () throws -> Duration) rethrows -> Duration {
            let before = Benchmark.minorFaults()
            defer { faults[kind, default: 0] += Benchmark.minorFaults() - before }
            return try body()
        }
        var found = 0
        var bytes = 0
        let all = requests(count: runs)
        let environment = try LMDBEnvironment.open(directory: db.url)
        defer { environment.release() }
        let docs = try environment.openDatabases(["docs"])[0]
        // First: the documents of other customers' equalities, read by id from LMDB alone
        // before anything else reads them.
        var first: [Duration] = []
        if kinds.contains("first") {
            let customers = Set(all.map { $0.equality.selector["customer"] })
            let others = requests(count: runs * 2, seed: 8).map(\.equality).filter { !customers.contains($0.selector["customer"]) }.prefix(runs)
            for documentIDs in try others.map({ try indexedIDs($0, db) }) {
                first.append(try counted("first") { try Benchmark.measure { bytes += try readRaw(documentIDs, from: docs, in: environment) } })
            }
        }
        for (equalityRequest, rangeRequest) in all {
            if kinds.contains("equality") {
                equality.append(try counted("equality") { try Benchmark.measure { bytes += try respond(db, equalityRequest, found: &found) } })
            }
            if kinds.contains("repeated") {
                repeated.append(try counted("repeated") { try Benchmark.measure { bytes += try respond(db, all[0].equality, found: &found) } })
            }
            if kinds.contains("range") { range.append(try counted("range") { try Benchmark.measure { bytes += try respond(db, rangeRequest, found: &found) } }) }
            if kinds.contains("parsed") { parsed.append(try counted("parsed") { try Benchmark.measure { found += try parse(db, rangeRequest) } }) }
        }
        // The equalities once more, in the same order: the pages they read are now mapped
        // (no page faults), their plans were made, but most are out of the CPU's caches again.
        var again: [Duration] = []
        if kinds.contains("again") {
            if !kinds.contains("equality") {
                for (equalityRequest, _) in all { bytes += try respond(db, equalityRequest, found: &found) }
            }
            for (equalityRequest, _) in all {
                again.append(try counted("again") { try Benchmark.measure { bytes += try respond(db, equalityRequest, found: &found) } })
            }
        }
        // The documents of the same equalities, in the same order, read by id from LMDB alone.
        var raw: [Duration] = []
        if kinds.contains("raw") {
            let ids = try all.map { try indexedIDs($0.equality, db) }
            if !kinds.contains("again") {
                for (equalityRequest, _) in all { bytes += try respond(db, equalityRequest, found: &found) }
            }
            for documentIDs in ids {
                raw.append(try counted("raw") { try Benchmark.measure { bytes += try readRaw(documentIDs, from: docs, in: environment) } })
            }
        }
        // Last: building the `created` index releases the pages the others mapped.
        var created: [Duration] = []
        var createdFound = 0
        if kinds.contains("created") {
            for request in try createdRequests(db, count: runs) {
                created.append(try counted("created") { try Benchmark.measure { bytes += try respond(db, request, found: &createdFound) } })
            }
            found += createdFound
        }
        precondition(found > 0 || (equality + repeated + range + parsed + again + created).isEmpty, "find found nothing")
        var figures: [(String, String)] = []
        func withFaults(_ times: [Duration], _ kind: String) -> String {
            Benchmark.percentiles(times) + String(format: ", %.2f page faults per query", Double(faults[kind] ?? 0) / Double(max(1, times.count)))
        }
        if !equality.isEmpty {
            figures.append(("find by equality on an indexed field, a customer's orders (about 12 documents) + response text (in process)", withFaults(equality, "equality")))
        }
        if !again.isEmpty {
            figures.append(("  the same equalities again, their pages mapped", withFaults(again, "again")))
        }
        if !first.isEmpty {
            let equality = equality.isEmpty ? nil : Benchmark.median(equality) / Benchmark.median(first)
            figures.append(("  other equalities' documents, first read by id from LMDB alone (the floor)",
                            withFaults(first, "first") + (equality.map { String(format: "; find with its response = %.2f × this", $0) } ?? "")))
        }
        if !raw.isEmpty {
            let again = again.isEmpty ? nil : Benchmark.median(again) / Benchmark.median(raw)
            figures.append(("  their documents read by id from LMDB alone, once find has read them",
                            withFaults(raw, "raw") + (again.map { String(format: "; find with its response = %.2f × this", $0) } ?? "")))
        }
        if !repeated.isEmpty {
            figures.append(("  the same equality each time (its plan kept)", withFaults(repeated, "repeated")))
        }
        if !created.isEmpty {
            figures.append(("  find by equality on an indexed field, one document (`created`, on an index of its own)",
                            withFaults(created, "created") + String(format: ", %.2f documents per query", Double(createdFound) / Double(created.count))))
        }
        if !range.isEmpty {
            figures.append(("find by range on an indexed field, limit 25 + response text", withFaults(range, "range")))
        }
        if !parsed.isEmpty {
            figures.append(("  the same range, each document parsed (JSONValue)", withFaults(parsed, "parsed")))
        }
        return figures
    }

    /// The ids of the documents `equality` finds, from its index's keys alone
    /// (no document is read choosing them).
    static func indexedIDs(_ equality: FindRequest, _ db: Database) throws -> [String] {
        var request = equality
        request.fields = ["_id"]
        return try db.find(request).documents.compactMap { $0["_id"]?.stringValue }
    }

    /// A query and its response body, as a server writes it: the body's length.
    @inline(never)
    static func respond(_ db: Database, _ request: FindRequest, found: inout Int) throws -> Int {
        let result = try db.find(request)
        found += result.found.count
        return result.jsonText.utf8.count
    }

    /// The documents `ids` read from the `docs` table in one read transaction, each byte
    /// line of their records touched: the bytes read.
    @inline(never)
    static func readRaw(_ ids: [String], from docs: LMDBTable, in environment: LMDBEnvironment) throws -> Int {
        try environment.read { transaction in
            var total = 0
            for id in ids {
                var key = id
                guard let record = try key.withUTF8({ try transaction.get(docs, UnsafeRawBufferPointer($0)) }) else { continue }
                for offset in stride(from: 0, to: record.count, by: 64) { total &+= Int(record[offset]) }
                total &+= record.count
            }
            return total
        }
    }

    /// A query whose documents are all read as values.
    @inline(never)
    static func parse(_ db: Database, _ request: FindRequest) throws -> Int {
        try db.find(request).documents.count
    }
}
