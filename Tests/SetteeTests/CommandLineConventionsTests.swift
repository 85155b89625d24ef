import Foundation
import Testing
import Settee

@Suite("The settee tool's command-line conventions")
struct CommandLineConventionsTests {
    @Test("settee --version prints the version and exits 0")
    func version() throws {
        let fixture = try CommandLineFixture(documents: 0)
        let outcome = try fixture.run(["--version"])
        #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
        let printed = outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed.wholeMatch(of: /\d+\.\d+\.\d+/) != nil, "\(printed)")
    }
}
