import Foundation
import Testing
import SetteeStorage
@testable import Settee

@Suite("Memory map", .ownThread)
struct MappedPagesTests {
    /// Kilobytes of the data file's mapping resident in this process (Linux's smaps).
    static func residentKilobytes(of directory: URL) throws -> Int? {
        let smaps = try #require(LMDBEnvironment.readWholeFile("/proc/self/smaps"))
        let file = directory.standardizedFileURL.resolvingSymlinksInPath().path + "/data.mdb"
        var inMapping = false
        for line in smaps.split(separator: "\n") {
            if line.first?.isHexDigit == true, line.contains("-") {
                inMapping = line.hasSuffix(file)
            } else if inMapping, line.hasPrefix("Rss:") {
                return Int(line.split(separator: " ")[1])
            }
        }
        return nil
    }

    /// A database of documents `d0`, `d1`, … with `n` their number and a `pad` of `padding` bytes.
    static func database(in directory: TemporaryDirectory, documents: Int, padding: Int) throws -> (Database, URL) {
        let url = directory.url.appendingPathComponent("db")
        let db = try Database(at: url)
        let pad = String(repeating: "x", count: padding)
        let lines = (0..<documents).map { #"{"_id": "d\#($0)", "n": \#($0), "pad": "\#(pad)"}"# }
        #expect(try db.importDocuments(Data(lines.joined(separator: "\n").utf8)).imported == documents)
        return (db, url)
    }

    @Test("Releasing the map's pages drops them from the process's memory; reads still see the same data")
    func release() throws {
        let directory = TemporaryDirectory()
        let (db, url) = try Self.database(in: directory, documents: 3000, padding: 2000)
        func readAll() throws -> Int {
            try (0..<3000).reduce(0) { sum, n in sum + (try db.document("d\(n)")!.value["n"]!.doubleValue.map(Int.init) ?? 0) }
        }
        let expected = (0..<3000).reduce(0, +)
        #expect(try readAll() == expected)
        let before = try #require(try Self.residentKilobytes(of: url))
        #expect(before > 4000, "reading 6 MB of documents made their pages resident")
        try db.environment.releaseMappedPages()
        let after = try #require(try Self.residentKilobytes(of: url))
        #expect(after < before / 4)
        #expect(try readAll() == expected)
    }

    /// Reads that pass every document of the database.
    enum LongRead: String, CaseIterable, CustomTestStringConvertible {
        case findScan = "find, no index", findThroughIndex = "find through an index"
        case viewWithDocuments = "view query, include_docs", allDocumentsWithDocuments = "_all_docs, include_docs"
        case allDocuments = "_all_docs", changes = "the changes feed", viewRows = "view query, rows streamed"
        var testDescription: String { rawValue }
    }

    @Test("A read of every document leaves a bounded part of the file resident", arguments: LongRead.allCases)
    func longReadsRelease(read: LongRead) throws {
        let directory = TemporaryDirectory()
        // 48 MB of documents, three times what a long read keeps mapped.
        let (db, url) = try Self.database(in: directory, documents: 6000, padding: 8000)
        var request = FindRequest(selector: ["n": ["$gte": 0], "pad": "none"])
        request.executionStats = true
        switch read {
        case .findScan, .findThroughIndex:
            if read == .findThroughIndex {
                try db.createIndex(ValueIndex(["n"]), name: "n")
                request.useIndex = ["n"]
                try db.updateIndexes()
            }
            #expect(try db.explain(request)["index"]?["name"]?.stringValue == (read == .findThroughIndex ? "n" : "_all_docs"))
            try db.environment.releaseMappedPages()
            let result = try db.find(request)
            #expect(result.documents.isEmpty)
            #expect(result.executionStats?.totalDocsExamined == 6000)
        case .viewWithDocuments:
            try db.put(#"{"_id": "_design/d", "views": {"n": {"map": "function (doc) { emit(doc.n, null); }"}}}"#)
            _ = try db.query("d/n", options: ViewQueryOptions(limit: 0))
            try db.environment.releaseMappedPages()
            let result = try db.query("d/n", options: ViewQueryOptions(includeDocs: true))
            #expect(result.rows.count == 6000 && result.rows.allSatisfy { $0.documentJSON?.count ?? 0 > 8000 })
        case .viewRows:
            // Rows as large as the documents: the index's pages are what the query reads.
            try db.put(#"{"_id": "_design/d", "views": {"pad": {"map": "function (doc) { emit(doc.n, doc.pad); }"}}}"#)
            _ = try db.query("d/pad", options: ViewQueryOptions(limit: 0))
            try db.environment.releaseMappedPages()
            var rows = 0
            try db.forEachRow("d/pad", options: ViewQueryOptions(), header: { _ in }) { row in
                if row.valueJSON.count > 8000 { rows += 1 }
            }
            #expect(rows == 6000)
        case .changes:
            try db.environment.releaseMappedPages()
            var count = 0
            try db.forEachChange(since: 0) { _ in count += 1 }
            #expect(count == 6000)
        case .allDocumentsWithDocuments, .allDocuments:
            try db.environment.releaseMappedPages()
            let result = try db.allDocuments(options: ViewQueryOptions(includeDocs: read == .allDocumentsWithDocuments))
            #expect(result.rows.count == 6000 && result.rows.allSatisfy { ($0.documentJSON?.count ?? 0 > 8000) == (read == .allDocumentsWithDocuments) })
        }
        let resident = try #require(try Self.residentKilobytes(of: url))
        #expect(resident < 24_000, "\(resident) kB of the file resident after reading 48 MB of documents")
    }

    @Test("A write of many documents leaves a bounded part of the file resident")
    func largeWriteReleases() throws {
        let directory = TemporaryDirectory()
        // 30 MB of documents, two to a page: updating them all reads every page of them.
        let (db, url) = try Self.database(in: directory, documents: 20_000, padding: 1500)
        var revisions: [String: String] = [:]
        try db.forEachChange(since: 0) { revisions[$0.id] = $0.revision.description }
        try db.environment.releaseMappedPages()
        let results = try db.write { batch in
            try (0..<20_000).map { n in
                let revision = revisions["d\(n)"]!
                return try batch.put(#"{"_id": "d\#(n)", "_rev": "\#(revision)", "n": \#(n + 1), "pad": "updated"}"#)
            }
        }
        #expect(results.count == 20_000)
        let resident = try #require(try Self.residentKilobytes(of: url))
        #expect(resident < 8_000, "\(resident) kB of the file resident after a write of 20,000 documents over 30 MB")
        #expect(try db.document("d19999")?.value["n"] == 20_000)
    }

    @Test("With read-ahead (the default), reading documents in order from a cold file takes a fraction of the disk reads it takes page by page")
    func readAhead() throws {
        /// Disk reads (major page faults) while reading every document, in id order, with the file out of memory.
        func coldReads(readAhead: Bool) throws -> Int {
            let directory = TemporaryDirectory()
            let url = directory.url.appendingPathComponent("db")
            var options = Database.Options()
            options.readAhead = readAhead
            let db = try Database(at: url, options: options)
            let padding = String(repeating: "x", count: 2000)
            let lines = (0..<3000).map { String(format: #"{"_id": "d%05d", "pad": "%@"}"#, $0, padding) }
            #expect(try db.importDocuments(Data(lines.joined(separator: "\n").utf8)).imported == 3000)
            // Out of this process's memory, then out of the page cache.
            try db.environment.releaseMappedPages()
            sync()
            let file = open(url.appendingPathComponent("data.mdb").path, O_RDONLY)
            #expect(posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED) == 0)
            close(file)
            let before = Self.majorFaults()
            for n in 0..<3000 { #expect(try db.document(String(format: "d%05d", n)) != nil) }
            return Self.majorFaults() - before
        }
        let pageByPage = try coldReads(readAhead: false)
        let ahead = try coldReads(readAhead: true)
        // 6 MB of documents: about 1,500 pages.
        #expect(pageByPage > 1000, "each page of the cold file read on its own: \(pageByPage) reads")
        #expect(ahead * 4 < pageByPage, "\(ahead) reads with read-ahead against \(pageByPage) without")
    }

    /// Major page faults of the calling thread (other tests may run meanwhile).
    static func majorFaults() -> Int {
        var usage = rusage()
        getrusage(1, &usage) // RUSAGE_THREAD (Linux), which the Glibc module leaves out
        return usage.ru_majflt
    }
}
