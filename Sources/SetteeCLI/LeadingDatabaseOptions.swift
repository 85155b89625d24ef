/// The database options (``DatabaseOptions``) may be written before the
/// subcommand, as in `settee --db PATH import FILE`. Each subcommand declares
/// them itself, `--db` required where the command needs a database (so its
/// usage line says so, and `settee couchjs` takes none); this moves options
/// written before the subcommand to after it, before ArgumentParser reads
/// the arguments.
enum LeadingDatabaseOptions {
    /// The options that take a value, by their long names.
    static let withValue: Set<String> = ["--db", "--max-document-size", "--max-design-document-size", "--busy-timeout"]
    /// The flags.
    static let flags: Set<String> = ["--verbose", "-v", "--read-only"]

    /// `arguments` with the database options that come before the first
    /// other word (the subcommand) moved to just after the subcommand's
    /// words (`design load`), unchanged when nothing follows them.
    static func moveAfterSubcommand(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if flags.contains(argument) || (withValue.contains(name) && argument.contains("=")) {
                leading.append(argument)
                index += 1
            } else if withValue.contains(argument) {
                leading += arguments[index..<min(index + 2, arguments.endIndex)]
                index += 2
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.endIndex, !arguments[index].hasPrefix("-") else { return arguments }
        // The subcommand's words: the first one and, for a command group, the ones naming its subcommand.
        var rest = Array(arguments[index...])
        var words = 1
        if rest[0] == "design" || rest[0] == "attachment", rest.count > 1, !rest[1].hasPrefix("-") { words = 2 }
        rest.insert(contentsOf: leading, at: words)
        return rest
    }
}
