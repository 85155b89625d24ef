import Foundation
import Testing
import Settee

@Suite("Shell completion", .ownThread)
struct ShellCompletionTests {
    @Test("--generate-completion-script writes a script that completes views and design documents from the database --db names")
    func completesNames() throws {
        let fixture = try CommandLineFixture(documents: 0)
        for shell in ["bash", "zsh", "fish"] {
            let script = try fixture.run(["--generate-completion-script", shell])
            #expect(script.exitStatus == 0, "\(shell): \(script.standardError)")
            #expect(script.standardOutput.contains("---completion query -- positional@0"), "\(shell)")
        }
        // What the scripts run: settee ---completion SUBCOMMAND… -- ARGUMENT WORD-INDEX CURSOR WORDS…
        func complete(_ arguments: [String]) throws -> [String] {
            let outcome = try fixture.run(arguments)
            #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
            return outcome.standardOutput.split(separator: "\n").map(String.init)
        }
        #expect(try complete(["---completion", "query", "--", "positional@0", "4", "0", "settee", "--db", fixture.db, "query", ""])
                == ["numbers/by_n", "numbers/count"])
        #expect(try complete(["---completion", "query", "--", "positional@0", "2", "1", "settee", "query", "n", "--db=\(fixture.db)"])
                == ["numbers/by_n", "numbers/count"])
        #expect(try complete(["---completion", "design", "show", "--", "positional@0", "5", "0", "settee", "--db", fixture.db, "design", "show", ""])
                == ["numbers"])
        // Every name: the shell keeps those that match what is typed.
        #expect(try complete(["---completion", "design", "delete", "--", "positional@0", "5", "1", "settee", "--db", fixture.db, "design", "delete", "x"])
                == ["numbers"])
        #expect(try complete(["---completion", "watch", "--", "--query", "6", "0", "settee", "--db", fixture.db, "watch", "--query", ""])
                == ["numbers/by_n", "numbers/count"])
        // Without --db, or with no database there, nothing is offered (and nothing is created).
        #expect(try complete(["---completion", "query", "--", "positional@0", "2", "0", "settee", "query", ""]) == [])
        let none = fixture.directory.url.appendingPathComponent("none").path
        #expect(try complete(["---completion", "query", "--", "positional@0", "4", "0", "settee", "--db", none, "query", ""]) == [])
        #expect(!FileManager.default.fileExists(atPath: none))
    }
}
