import Foundation
import Testing
@testable import Settee

@Suite("Memory map")
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

    @Test("Releasing the map's pages drops them from the process's memory; reads still see the same data")
    func release() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let db = try Database(at: url)
        let padding = String(repeating: "x", count: 2000)
        let lines = (0..<3000).map { #"{"_id": "d\#($0)", "n": \#($0), "pad": "\#(padding)"}"# }
        #expect(try db.importDocuments(Data(lines.joined(separator: "\n").utf8)).imported == 3000)
        func readAll() throws -> Int {
            try (0..<3000).reduce(0) { sum, n in sum + (try db.document("d\(n)")!.value["n"]!.doubleValue.map(Int.init) ?? 0) }
        }
        let expected = (0..<3000).reduce(0, +)
        #expect(try readAll() == expected)
        let before = try #require(try Self.residentKilobytes(of: url))
        #expect(before > 4000, "reading 6 MB of documents made their pages resident")
        db.environment.releaseMappedPages()
        let after = try #require(try Self.residentKilobytes(of: url))
        #expect(after < before / 4)
        #expect(try readAll() == expected)
    }
}
