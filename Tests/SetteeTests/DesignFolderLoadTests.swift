import Foundation
import Testing
import SetteeViews
@testable import Settee

@Suite("Loading a folder of design documents", .timeLimit(.minutes(10)), .ownThread)
struct DesignFolderLoadTests {
    /// One design document of a folder refused when stored (here: the index
    /// limit, checked as it is written) must leave the others as they were,
    /// as a SIGKILL mid-load must: the folder goes in in one transaction.
    @Test("A folder loads in one transaction: a design document refused when stored leaves every other as it was")
    func folderLoadIsAtomic() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let folder = directory.url.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func write(_ name: String, _ contents: String) throws {
            try Data(contents.utf8).write(to: folder.appendingPathComponent(name))
        }
        try write("a.json", manyViews("a", count: 1))
        try write("b.json", manyViews("b", count: 1))
        try db.loadDesignDocuments(from: folder)
        let before = try ["a", "b"].map { try #require(try db.document("_design/" + $0)).revision }

        // a and b edited; c, last, needs more indexes than the database holds.
        try write("a.json", manyViews("a", count: 1, from: 10))
        try write("b.json", manyViews("b", count: 1, from: 20))
        try write("c.json", manyViews("c", count: ViewIndexStore.maximumIndexes + 1, from: 100))
        #expect(throws: DesignDocumentErrors.self) { _ = try db.loadDesignDocuments(from: folder) }
        #expect(try ["a", "b"].map { try #require(try db.document("_design/" + $0)).revision } == before)
        #expect(try db.designDocument("c") == nil)
        #expect(try db.designDocument("a")?.views.map(\.name) == ["v0"])
    }
}

@Suite("design load killed mid-way", .timeLimit(.minutes(10)), .ownThread)
struct DesignFolderKillTests {
    /// A folder of design documents `d000`…, each with one view emitting `version`.
    private func writeFolder(_ folder: URL, files: Int, version: Int) throws {
        for index in 0..<files {
            let name = String(format: "d%03d", index)
            let design = #"{"_id": "_design/\#(name)", "views": {"v": {"map": "function (doc) { emit(\#(version), null); }"}}}"#
            try Data(design.utf8).write(to: folder.appendingPathComponent(name + ".json"))
        }
    }

    /// How many of the folder's design documents the database holds at each version.
    private func versions(at path: URL, files: Int) throws -> [Int: Int] {
        let db = try Database(at: path)
        var counts: [Int: Int] = [:]
        for index in 0..<files {
            let map = try db.designDocument(String(format: "d%03d", index))?.view("v")?.map ?? ""
            let version = map.contains("emit(2,") ? 2 : map.contains("emit(1,") ? 1 : 0
            counts[version, default: 0] += 1
        }
        return counts
    }

    @Test("SIGKILL during design load of a folder leaves every design document old or every one new")
    func killedFolderLoadIsAllOrNothing() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("db")
        let folder = directory.url.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let files = 300
        try writeFolder(folder, files: files, version: 1)
        #expect(try settee.run(["--db", path.path, "design", "load", folder.path], in: directory.url).exitStatus == 0)

        // How long a load of new versions takes here, unkilled, so that the kills land inside it.
        try writeFolder(folder, files: files, version: 2)
        let started = ContinuousClock.now
        #expect(try settee.run(["--db", path.path, "design", "load", folder.path], in: directory.url).exitStatus == 0)
        let loadTime = ContinuousClock.now - started
        var current = 2
        var random = SplitMix64(seed: 12)
        for round in 0..<8 {
            let next = current == 1 ? 2 : 1
            try writeFolder(folder, files: files, version: next)
            let child = try settee.start(["--db", path.path, "design", "load", folder.path], in: directory.url)
            let fraction = Double(random.next() % 1000) / 1000
            usleep(UInt32(loadTime / .microseconds(1) * fraction))
            child.kill()
            _ = try child.wait()
            let counts = try versions(at: path, files: files)
            #expect(counts == [current: files] || counts == [next: files], "round \(round): \(counts)")
            if counts == [next: files] { current = next }
        }
    }
}
