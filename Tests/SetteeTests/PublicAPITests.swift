import Foundation
import Testing

/// Type-checks `source`, a file of a program that depends on Settee, against
/// the Settee module this test run was built with. Returns the compiler's
/// exit status and its diagnostics.
///
/// `stage` is how far the compiler goes: `-typecheck`, or `-emit-sil` for
/// the checks that run on SIL (data races: sending a value across isolation).
private func typeCheckAsDependent(_ source: String, in directory: TemporaryDirectory, arguments: [String] = [],
                                  stage: [String] = ["-typecheck"]) throws -> (status: Int32, output: String) {
    let build = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()  // …/debug/SetteePackageTests.xctest → …/debug
    let modules = build.appendingPathComponent("Modules")
    guard FileManager.default.fileExists(atPath: modules.path) else {
        throw SetteeExecutableError(message: "no Modules folder next to \(CommandLine.arguments[0])")
    }
    let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let file = directory.file("main.swift", contents: source)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["swiftc"] + stage + [file.path, "-I", modules.path,
                         "-Xcc", "-fmodule-map-file=\(packageRoot.path)/Sources/CSetteeLMDB/module.modulemap",
                         "-Xcc", "-fmodule-map-file=\(packageRoot.path)/Sources/CSetteeZlib/module.modulemap",
                         "-Xcc", "-fmodule-map-file=\(build.path)/CSetteeLMDBGuard.build/module.modulemap",
                         "-Xcc", "-fmodule-map-file=\(build.path)/CSetteeJS.build/module.modulemap",
                         "-Xcc", "-fmodule-map-file=\(build.path)/CSetteeCollation.build/module.modulemap"] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}

@Suite("Public API")
struct PublicAPITests {
    @Test("A program importing Settee sees its API, and none of its internals (no MD5, SHA256, JSON parser or hexString to collide with)")
    func internalsAreHidden() throws {
        let directory = TemporaryDirectory()
        let uses = try typeCheckAsDependent("""
            import Settee
            let value = try JSONValue(parsing: #"{"a": 1}"#)
            let options = ViewQueryOptions(limit: 1)
            print(value, options, SetteeErrorCode.conflict)
            """, in: directory)
        #expect(uses.status == 0, "\(uses.output)")

        let internals = ["MD5()", "SHA256()", "JSONParser.self", "JSONWriter.self", "JSONObjectScanner.self", "MapOutput.self",
                         "BuiltinReducer.self", "[UInt8]().hexString"]
        let probe = try typeCheckAsDependent("import Settee\n" + internals.map { "_ = \($0)\n" }.joined(), in: directory)
        #expect(probe.status != 0)
        for (line, name) in internals.enumerated() {
            #expect(probe.output.contains("main.swift:\(line + 2):"), "\(name) is visible to a program importing Settee")
        }
    }

    @Test("The README's library example type-checks as a program depending on Settee")
    func readmeExampleCompiles() throws {
        let directory = TemporaryDirectory()
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md"), encoding: .utf8)
        let library = try #require(readme.range(of: "## The library"))
        // The program (the block that imports Settee, after the package manifest's lines).
        let fence = try #require(readme.range(of: "```swift\nimport Settee\n", range: library.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "\n```", range: fence.upperBound..<readme.endIndex))
        // The example elides closure bodies with "…"; the names it assumes come first.
        let example = String(readme[fence.upperBound..<end.lowerBound]).replacingOccurrences(of: "…", with: "")
        let program = "import Foundation\nimport Settee\nlet coverURL = URL(fileURLWithPath: \"cover.png\")\n" + example
        let checked = try typeCheckAsDependent(program, in: directory)
        #expect(checked.status == 0, "\(checked.output)")
    }

    @Test("From async code, `try await` calls the async forms; a synchronous form there does not compile")
    func asyncCodeCallsAsyncForms() throws {
        let directory = TemporaryDirectory()
        // A model that is not Sendable goes through the async put and get.
        let asyncForms = try typeCheckAsDependent("""
            import Settee
            final class Note: Codable { var text = "" }
            func work(_ db: Database) async throws {
                let result: ViewResult = try await db.query("app/by_tag", options: ViewQueryOptions(key: "swift")) { _ in }
                try await db.put(Note(), id: "n1")
                let note: Note? = try await db.get("n1")
                try await db.updateIndexes { _ in }
                let info: DatabaseInfo = try await db.info()
                let sequence: UInt64 = try await db.lastSequence()
                let views: [ViewInfo] = try await db.viewInfo()
                let rows = try await db.view("app/by_tag", key: String.self, value: Int.self).query()
                print(result, note as Any, info, sequence, views, rows)
            }
            """, in: directory, arguments: ["-swift-version", "6", "-warnings-as-errors"])
        #expect(asyncForms.status == 0, "\(asyncForms.output)")

        let blocking = try typeCheckAsDependent("""
            import Settee
            func work(_ db: Database) async throws {
                _ = try db.lastSequence()
            }
            """, in: directory, arguments: ["-swift-version", "6"])
        #expect(blocking.status != 0)
        // Without `await`, the async form is still the one picked: the call does not compile.
        #expect(blocking.output.contains("main.swift:3:") && blocking.output.contains("expression is 'async' but is not marked with 'await'"),
                "\(blocking.output)")
    }

    @Test("Top-level code that awaits cannot call a synchronous form by accident: Swift resolves it to the synchronous one, which is unavailable there")
    func topLevelCodeIsTold() throws {
        let directory = TemporaryDirectory()
        let program = """
            import Foundation
            import Settee
            let db = try Database(at: URL(fileURLWithPath: "db"))
            let sequence = try await db.lastSequence()
            """
        let swift6 = try typeCheckAsDependent(program, in: directory, arguments: ["-swift-version", "6"])
        #expect(swift6.status != 0)
        #expect(swift6.output.contains("main.swift:4:") && swift6.output.contains("use the async form"), "\(swift6.output)")
        // In the Swift 5 language mode, a warning says it.
        let swift5 = try typeCheckAsDependent(program, in: directory, arguments: ["-swift-version", "5"])
        #expect(swift5.output.contains("use the async form"), "\(swift5.output)")
        // Inside an async function (or a Task), top-level code reaches the async form.
        let wrapped = try typeCheckAsDependent("""
            import Foundation
            import Settee
            let db = try Database(at: URL(fileURLWithPath: "db"))
            func main() async throws { print(try await db.lastSequence()) }
            try await main()
            """, in: directory, arguments: ["-swift-version", "6", "-warnings-as-errors"])
        #expect(wrapped.status == 0, "\(wrapped.output)")
    }

    @Test("A main-actor model writes, reads and follows (a typed view) its non-Sendable values with the async forms, without a data race")
    func mainActorModel() throws {
        let directory = TemporaryDirectory()
        let checked = try typeCheckAsDependent("""
            import Settee
            final class Note: Codable { var text = "" }
            @MainActor final class Model {
                var note = Note()
                var rows: [TypedViewRow<String, Int, Note>] = []
                func save(_ db: Database) async throws {
                    try await db.put(note, id: "n1")
                    note = try await db.get("n1", as: Note.self) ?? note
                }
                func follow(_ db: Database) async throws {
                    let byTag = db.view("notes/by_tag", key: String.self, value: Int.self, document: Note.self)
                    rows = try await byTag.query(ViewQueryOptions(includeDocs: true))
                    for try await update in byTag.liveQuery(ViewQueryOptions(includeDocs: true)) { rows = update }
                }
            }
            """, in: directory, arguments: ["-swift-version", "6", "-warnings-as-errors"], stage: ["-emit-sil", "-o", "/dev/null"])
        #expect(checked.status == 0, "\(checked.output)")
    }
}
