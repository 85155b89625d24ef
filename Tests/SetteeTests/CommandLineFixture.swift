import Foundation
import Testing
import Settee

/// A database directory with a design document and a few documents, made
/// with the `settee` tool itself, for tests of its command-line conventions.
struct CommandLineFixture {
    let directory = TemporaryDirectory()
    let settee: SetteeExecutable
    let db: String

    init(documents: Int = 4) throws {
        settee = try SetteeExecutable.find()
        db = directory.url.appendingPathComponent("db").path
        let design = directory.file("numbers.json", contents: #"""
            {"_id": "_design/numbers", "views": {
              "by_n": {"map": "function (doc) { if (typeof doc.n === 'number') emit(doc.n, null); }"},
              "count": {"map": "function (doc) { if (typeof doc.n === 'number') emit(doc.n % 2, 1); }", "reduce": "_count"}}}
            """#)
        let load = try settee.run(["--db", db, "design", "load", design.path], in: directory.url)
        guard load.exitStatus == 0 else { throw SetteeExecutableError(message: "design load failed: \(load.standardError)") }
        let lines = (0..<documents).map { #"{"_id": "n\#($0 + 1)", "n": \#($0 + 1)}"# }
        if !lines.isEmpty {
            let input = directory.file("numbers.ndjson", contents: lines.joined(separator: "\n") + "\n")
            let imported = try settee.run(["--db", db, "import", input.path], in: directory.url)
            guard imported.exitStatus == 0 else { throw SetteeExecutableError(message: "import failed: \(imported.standardError)") }
        }
    }

    /// Runs `settee arguments…` (give `--db` where wanted).
    func run(_ arguments: [String]) throws -> ChildProcess.Outcome {
        try settee.run(arguments, in: directory.url)
    }
}
