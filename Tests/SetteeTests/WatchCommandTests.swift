import Foundation
import Testing
import Settee

/// The `settee` tool built beside the test bundle (`swift build --build-tests` builds every product).
private let setteeTool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("settee")

/// A running `settee` whose standard output and error are read line by line.
private final class RunningTool: Sendable {
    let process: Process
    let output: AsyncStream<String>
    let errors: AsyncStream<String>

    init(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = setteeTool
        process.arguments = arguments
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        output = Self.lines(of: stdout)
        errors = Self.lines(of: stderr)
        try process.run()
        self.process = process
    }

    private static func lines(of pipe: Pipe) -> AsyncStream<String> {
        let (stream, sink) = AsyncStream.makeStream(of: String.self)
        let buffer = LineBuffer()
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                sink.finish()
                return
            }
            for line in buffer.append(data) { sink.yield(line) }
        }
        return stream
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// Bytes read so far, cut into lines.
private final class LineBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var pending: [UInt8] = []

    func append(_ data: Data) -> [String] {
        lock.withLock {
            pending.append(contentsOf: data)
            var lines: [String] = []
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<end], as: UTF8.self))
                pending.removeSubrange(...end)
            }
            return lines
        }
    }
}

@Suite("settee watch", .timeLimit(.minutes(1)))
struct WatchCommandTests {
    @Test("settee watch loads the folder, prints the live view, reports a broken edit with its place, and takes a good one")
    func watch() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: setteeTool.path), "built by swift build --build-tests")
        let directory = TemporaryDirectory()
        let folder = directory.url.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("notes.json")
        func design(_ map: String) -> String {
            #"{"_id": "_design/notes", "views": {"all": {"map": "function (doc) {\n  \#(map);\n}"}}}"#
        }
        try Data(design("emit(doc._id, null)").utf8).write(to: file)
        let tool = try RunningTool(["--db", directory.url.appendingPathComponent("db").path, "watch", "--design", folder.path, "--query", "notes/all"])
        defer { tool.stop() }
        var output = tool.output.makeAsyncIterator()
        var errors = tool.errors.makeAsyncIterator()

        let loaded = try JSONValue(parsing: try #require(await output.next()))
        #expect(loaded["loaded"]?[0]?["id"] == "_design/notes")
        #expect(loaded["loaded"]?[0]?["changed_views"] == ["all"])
        let query = try JSONValue(parsing: try #require(await output.next()))
        #expect(query["query"] == "notes/all")
        #expect(query["result"]?["rows"] == [])

        try Data(design("emit(doc._id null)").utf8).write(to: file)
        let error = try #require(await errors.next())
        let problem = try JSONValue(parsing: error)["problems"]?[0]
        #expect(problem?["description"]?.stringValue?.hasPrefix("\(file.path):1, _design/notes, view \"all\", map, line 2, column ") == true, "\(error)")
        let refused = try JSONValue(parsing: try #require(await output.next()))
        #expect(refused["loaded"] == [])
        #expect(refused["errors"]?.arrayValue?.count == 1)

        try Data(design("emit(doc.title, null)").utf8).write(to: file)
        let edited = try JSONValue(parsing: try #require(await output.next()))
        #expect(edited["loaded"]?[0]?["changed_views"] == ["all"])
    }
}

@Suite("settee watch --query and a missing design document", .timeLimit(.minutes(1)))
struct WatchCommandMissingDesignTests {
    @Test("Deleting the queried view's file reports it and keeps watching; the file coming back brings the query back")
    func queryOutlivesDeletedDesignDocument() async throws {
        let directory = TemporaryDirectory()
        let folder = directory.url.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("notes.json")
        let design = #"{"_id": "_design/notes", "views": {"all": {"map": "function (doc) { emit(doc._id, null); }"}}}"#
        try Data(design.utf8).write(to: file)
        let tool = try RunningTool(["--db", directory.url.appendingPathComponent("db").path, "watch", "--design", folder.path, "--query", "notes/all"])
        defer { tool.stop() }
        var output = tool.output.makeAsyncIterator()
        var errors = tool.errors.makeAsyncIterator()
        #expect(try JSONValue(parsing: try #require(await output.next()))["loaded"]?[0]?["id"] == "_design/notes")
        #expect(try JSONValue(parsing: try #require(await output.next()))["query"] == "notes/all")

        try FileManager.default.removeItem(at: file)
        let removed = try JSONValue(parsing: try #require(await output.next()))
        #expect(removed["removed"]?[0]?["id"] == "_design/notes")
        let error = try #require(await errors.next())
        #expect(error.contains("not_found"))
        #expect(tool.process.isRunning)

        try Data(design.utf8).write(to: file)
        #expect(try JSONValue(parsing: try #require(await output.next()))["loaded"]?[0]?["id"] == "_design/notes")
        let query = try JSONValue(parsing: try #require(await output.next()))
        #expect(query["query"] == "notes/all")
        #expect(query["result"]?["rows"] == [])
        #expect(tool.process.isRunning)
    }
}

@Suite("settee watch --query with query parameters", .timeLimit(.minutes(1)))
struct WatchQueryParameterTests {
    @Test("watch --query takes the view's query parameters: a reduce view grouped and limited, not only its grand total")
    func groupedAndLimited() async throws {
        let directory = TemporaryDirectory()
        let folder = directory.url.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(#"{"_id": "_design/notes", "views": {"by": {"map": "function (doc) { emit(doc.k, 1); }", "reduce": "_count"}}}"#.utf8)
            .write(to: folder.appendingPathComponent("notes.json"))
        let dbURL = directory.url.appendingPathComponent("db")
        do {
            let db = try Database(at: dbURL)
            for (index, key) in ["a", "a", "b"].enumerated() { _ = try await db.put(#"{"_id":"n\#(index)","k":"\#(key)"}"#) }
            db.close()
        }
        let tool = try RunningTool(["--db", dbURL.path, "watch", "--design", folder.path, "--query", "notes/by", "--group", "--limit", "1"])
        defer { tool.stop() }
        var output = tool.output.makeAsyncIterator()
        _ = try #require(await output.next())   // loaded
        let query = try JSONValue(parsing: try #require(await output.next()))
        #expect(query["result"]?["rows"] == [["key": "a", "value": 2]], "\(query.jsonText)")
    }
}
