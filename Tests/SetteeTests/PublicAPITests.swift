import Foundation
import Testing

/// Type-checks `source`, a file of a program that depends on Settee, against
/// the Settee module this test run was built with. Returns the compiler's
/// exit status and its diagnostics.
private func typeCheckAsDependent(_ source: String, in directory: TemporaryDirectory) throws -> (status: Int32, output: String) {
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
    process.arguments = ["swiftc", "-typecheck", file.path, "-I", modules.path,
                         "-Xcc", "-fmodule-map-file=\(packageRoot.path)/Sources/CSetteeLMDB/module.modulemap",
                         "-Xcc", "-fmodule-map-file=\(build.path)/CSetteeJS.build/module.modulemap",
                         "-Xcc", "-fmodule-map-file=\(build.path)/CSetteeCollation.build/module.modulemap"]
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
        let fence = try #require(readme.range(of: "```swift\n", range: library.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "\n```", range: fence.upperBound..<readme.endIndex))
        // The example elides closure bodies with "…"; the names it assumes come first.
        let example = String(readme[fence.upperBound..<end.lowerBound]).replacingOccurrences(of: "…", with: "")
        let program = "import Foundation\nlet coverURL = URL(fileURLWithPath: \"cover.png\")\n" + example
        let checked = try typeCheckAsDependent(program, in: directory)
        #expect(checked.status == 0, "\(checked.output)")
    }
}
