import ArgumentParser

/// CouchDB's boolean view parameters may stand alone on the command line, as
/// flags do: `--descending` means `--descending true`. A value may still
/// follow (`--descending false`, `--descending=false`), as in CouchDB's query
/// string, so the options take a value and this rewrites a lone one before
/// ArgumentParser reads the arguments.
enum BooleanQueryFlags {
    /// CouchDB's boolean view parameters, by every long name they take.
    static let names: Set<String> = Set(
        ["inclusive_end", "descending", "group", "reduce", "include_docs", "conflicts", "update_seq", "stable", "sorted", "update", "attachments"]
            .flatMap { [$0, kebabCase($0)] })

    /// `arguments` with each boolean parameter that no value follows given
    /// the value `true`. A value is a word CouchDB takes for the parameter
    /// (`true` or `false` in any case, and `lazy` for `update`); anything
    /// else after it (the view's name, another option) stays as it was.
    static func expand(_ arguments: [String]) -> [String] {
        var expanded: [String] = []
        expanded.reserveCapacity(arguments.count)
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                expanded += arguments[(index - 1)...]
                break
            }
            guard argument.hasPrefix("--"), names.contains(String(argument.dropFirst(2))) else {
                expanded.append(argument)
                continue
            }
            if index < arguments.endIndex, isValue(arguments[index], for: String(argument.dropFirst(2))) {
                expanded.append(argument)
            } else {
                expanded.append(argument + "=true")
            }
        }
        return expanded
    }

    private static func isValue(_ word: String, for name: String) -> Bool {
        switch word.lowercased() {
        case "true", "false": true
        case "lazy": name == "update"
        default: false
        }
    }

    /// `group_level` → `group-level`.
    static func kebabCase(_ name: String) -> String {
        String(name.map { $0 == "_" ? "-" : $0 })
    }
}

extension NameSpecification {
    /// A CouchDB query parameter's name as a long option, and its kebab-case
    /// spelling too when that differs (`--group_level`, `--group-level`).
    static func couchDB(_ name: String) -> NameSpecification {
        let kebab = BooleanQueryFlags.kebabCase(name)
        return kebab == name ? [.customLong(name)] : [.customLong(name), .customLong(kebab)]
    }
}
