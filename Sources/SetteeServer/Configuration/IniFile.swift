import Foundation
import HTTPTypes

/// The text of a configuration file as CouchDB writes its `local.ini`:
/// `[section]` lines, each followed by its `key = value` lines.
///
/// Lines starting with `;` are comments; a value is the rest of its line,
/// trimmed. Keys and values hold no line break (``ServerConfig`` refuses
/// them), so every value written reads back the same.
enum IniFile {
    /// The sections of `text`, each a map of key to value; a key given twice keeps the last.
    /// - Throws: `CouchError` naming the line that is neither a section, a
    ///   `key = value`, a comment nor blank.
    static func parse(_ text: String, file: String) throws -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var section: String?
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let name = String(line.dropFirst().dropLast())
                section = name
                sections[name, default: [:]] = sections[name] ?? [:]
                continue
            }
            guard let name = section, let equals = line.firstIndex(of: "=") else {
                throw CouchError(.internalServerError, "invalid_config", "\(file), line \(number + 1): expected [section] or key = value, found \(line.prefix(80))")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[name, default: [:]][key] = value
        }
        return sections
    }

    /// `sections` as text, sections and keys in order.
    static func text(_ sections: [String: [String: String]]) -> String {
        var text = ""
        for (name, values) in sections.sorted(by: { $0.key < $1.key }) where !values.isEmpty {
            text += "[\(name)]\n"
            for (key, value) in values.sorted(by: { $0.key < $1.key }) { text += "\(key) = \(value)\n" }
            text += "\n"
        }
        return text
    }
}
