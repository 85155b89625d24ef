import Foundation
import Settee

/// Completions the shell asks for while a command is typed (the scripts
/// `settee --generate-completion-script bash|zsh|fish` prints call back into
/// settee): the design documents and views of the database that `--db` names
/// on the command line. Nothing is offered without `--db`, or when the
/// database cannot be read; the database is opened read-only. Every name is
/// offered: the shell keeps those that match the word being typed.
enum ShellCompletion {
    /// Design document names (`NAME`), for `design show` and `design delete`.
    @Sendable static func designDocuments(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        guard let designs = designDocuments(in: words) else { return [] }
        return designs.map(\.name)
    }

    /// View paths (`DESIGN/VIEW`), for `query` and `watch --query`.
    @Sendable static func views(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        guard let designs = designDocuments(in: words) else { return [] }
        return designs.flatMap { design in design.views.map { "\(design.name)/\($0.name)" } }
    }

    /// The design documents of the database the words name with `--db PATH` or `--db=PATH`.
    private static func designDocuments(in words: [String]) -> [DesignDocument]? {
        var path: String?
        for (index, word) in words.enumerated() {
            if word == "--db", index + 1 < words.count { path = words[index + 1] }
            if word.hasPrefix("--db=") { path = String(word.dropFirst("--db=".count)) }
        }
        guard let path, !path.isEmpty else { return nil }
        var options = Database.Options()
        options.readOnly = true
        options.createIfMissing = false
        let expanded = (path as NSString).expandingTildeInPath
        guard let db = try? Database(at: URL(fileURLWithPath: expanded), options: options) else { return nil }
        return try? db.designDocuments()
    }
}
