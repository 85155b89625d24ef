import Foundation
import Testing
import Settee
import SetteeServer

/// A database whose file has a page overwritten with random bytes, as a
/// failing disk or a stray write leaves it: LMDB, which keeps no checksums,
/// may follow the page into an assertion (it would abort the process) or
/// into an address outside the file (a fault). Reads and checks of it must
/// answer `database_damaged` for it alone; the process lives on.
@Suite("A damaged database answers database_damaged, and the process lives on")
struct DamagedDatabaseTests {
    /// A database of `count` documents at `directory`, closed.
    static func makeDatabase(at directory: URL, count: Int = 20_000) throws {
        let db = try Database(at: directory)
        try db.write { batch in
            for i in 0..<count {
                try batch.put(#"{"_id":"doc-\#(String(format: "%06d", i))","n":\#(i),"text":"document number \#(i) document number \#(i)"}"#)
            }
        }
    }

    /// A copy of `source` at `target` with one page past the two meta pages overwritten.
    static func damagedCopy(of source: URL, at target: URL, seed: UInt64) throws {
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: source, to: target)
        let file = try FileHandle(forUpdating: target.appendingPathComponent("data.mdb"))
        defer { try? file.close() }
        let pages = try file.seekToEnd() / 4096
        var random = SplitMix64(seed: seed)
        try file.seek(toOffset: UInt64.random(in: 2..<pages, using: &random) * 4096)
        file.write(Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }))
    }

    /// Whether `text` is the guard's account of an assertion or a fault, which
    /// would have ended the process without it.
    static func caughtByGuard(_ text: String) -> Bool {
        text.contains("LMDB stopped on a page") || text.contains("SIGSEGV") || text.contains("SIGBUS")
    }

    @Test("Reading and verifying twelve damaged copies: every failure is database_damaged, none ends the process")
    func readsAndVerify() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settee-damaged-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let pristine = folder.appendingPathComponent("pristine")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.makeDatabase(at: pristine)
        var caught = 0
        var damagedAnswers = 0
        for seed in 1...12 as ClosedRange<UInt64> {
            let copy = folder.appendingPathComponent("copy-\(seed)")
            try Self.damagedCopy(of: pristine, at: copy, seed: seed)
            func attempt(_ what: String, _ body: () throws -> Void) {
                do {
                    try body()
                } catch let error as any SetteeError {
                    #expect(error.errorCode == .databaseDamaged, "seed \(seed), \(what): \(error)")
                    damagedAnswers += 1
                    if Self.caughtByGuard("\(error)") { caught += 1 }
                } catch {
                    Issue.record("seed \(seed), \(what): \(error)")
                }
            }
            var db: Database?
            attempt("open") { db = try Database(at: copy) }
            guard let db else { continue }
            attempt("all documents") { _ = try db.allDocuments(options: ViewQueryOptions(includeDocs: true)) }
            attempt("changes") { _ = try db.changes() }
            attempt("documents by id") { for i in stride(from: 0, to: 20_000, by: 97) { _ = try db.document(String(format: "doc-%06d", i)) } }
            attempt("verify") {
                let report = try db.verify()
                if !report.isIntact {
                    damagedAnswers += 1
                    if report.problems.contains(where: Self.caughtByGuard) { caught += 1 }
                }
            }
            attempt("write") { _ = try db.put(#"{"_id":"after","n":1}"#) }
        }
        #expect(damagedAnswers > 0)
        // Without the guard, these end the test process instead.
        #expect(caught > 0, "no assertion or fault was met: the damage did not reach LMDB's page walk")
    }

    @Test("settee serve: a damaged database answers database_damaged for itself alone; the others and the server go on")
    func serverLivesOn() async throws {
        let first = try await RunningServer()
        let folder = first.directory
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try await first.request("PUT", "/good").status == 201)
        #expect(try await first.request("PUT", "/good/doc", json: ["n": 1]).status == 201)
        await first.stopKeepingFolder()
        let pristine = folder.appendingPathComponent("_pristine-bad")
        try Self.makeDatabase(at: pristine)
        var caught = 0
        for seed in 1...12 as ClosedRange<UInt64> {
            try Self.damagedCopy(of: pristine, at: folder.appendingPathComponent("bad"), seed: seed)
            let server = try await RunningServer { $0.dataDirectory = folder }
            for path in ["/bad/_all_docs?include_docs=true", "/bad/_changes", "/bad/doc-010000", "/bad/_all_docs?keys=%5B%22doc-019999%22%5D"] {
                let reply: RunningServer.Reply
                do {
                    reply = try await server.request("GET", path)
                } catch {
                    // A streamed answer already under way when its damage is met is cut short, as CouchDB cuts it.
                    #expect(path.contains("_changes") || path.contains("_all_docs"), "seed \(seed) \(path): \(error)")
                    continue
                }
                let text = String(decoding: reply.body, as: UTF8.self)
                #expect(reply.status == 200 || reply.status == 404 || (reply.status == 500 && reply.json["error"] == "database_damaged"),
                        "seed \(seed) \(path): \(reply.status) \(text.prefix(300))")
                if Self.caughtByGuard(text) { caught += 1 }
            }
            #expect(try await server.request("GET", "/good/doc").json["n"] == 1, "seed \(seed)")
            #expect(try await server.request("PUT", "/good/seed-\(seed)", json: [:]).status == 201)
            await server.stopKeepingFolder()
        }
        #expect(caught > 0, "no assertion or fault was met: the damage did not reach LMDB's page walk")
    }
}
