import Foundation
import HTTPTypes

/// What a new `_users` password must match: CouchDB's `[couch_httpd_auth]
/// password_regexp`, an Erlang list whose elements are a regular expression
/// (`".{10,}"`) or one with the reason a refusal gives (`{"[A-Z]+", "Needs
/// a capital."}`). The rules are checked in order; the first a password
/// does not match refuses it (400). A value that is not such a list
/// refuses every new password (403), as CouchDB does.
enum PasswordRules: Sendable {
    /// No rule (the setting is absent).
    case none
    /// The rules, in order, compiled.
    case rules([(expression: NSRegularExpression, reason: String)])
    /// A value that does not read as a list of rules.
    case unreadable

    /// The rules `text` writes.
    init(_ text: String?) {
        guard let text else { self = .none; return }
        guard let rules = Self.parse(Array(text.utf8)) else { self = .unreadable; return }
        var compiled: [(expression: NSRegularExpression, reason: String)] = []
        for rule in rules {
            guard let expression = try? NSRegularExpression(pattern: rule.expression) else { self = .unreadable; return }
            compiled.append((expression, rule.reason))
        }
        self = .rules(compiled)
    }

    /// Refuses `password` as CouchDB does when it does not match the rules.
    func check(_ password: String) throws(CouchError) {
        switch self {
        case .none:
            return
        case .unreadable:
            throw CouchError(.forbidden, "forbidden", "Server cannot hash passwords at this time.")
        case .rules(let rules):
            for rule in rules {
                if rule.expression.firstMatch(in: password, range: NSRange(password.startIndex..., in: password)) == nil {
                    let reason = rule.reason.isEmpty ? "" : " " + rule.reason
                    throw CouchError.badRequest("Password does not conform to requirements." + reason)
                }
            }
        }
    }

    /// `[ rule, … ]` where a rule is `"expression"`, `{"expression"}` or
    /// `{"expression", "reason"}`, strings with Erlang's `\\` escapes.
    private static func parse(_ bytes: [UInt8]) -> [(expression: String, reason: String)]? {
        var index = 0
        func skipSpace() { while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 } }
        func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            var value: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\"") { return String(decoding: value, as: UTF8.self) }
                if byte == UInt8(ascii: "\\") {
                    guard index < bytes.count else { return nil }
                    value.append(bytes[index])
                    index += 1
                } else {
                    value.append(byte)
                }
            }
            return nil
        }
        guard take(UInt8(ascii: "[")) else { return nil }
        var rules: [(expression: String, reason: String)] = []
        if take(UInt8(ascii: "]")) { skipSpace(); return index == bytes.count ? rules : nil }
        repeat {
            if take(UInt8(ascii: "{")) {
                guard let expression = string() else { return nil }
                var reason = ""
                if take(UInt8(ascii: ",")) {
                    guard let given = string() else { return nil }
                    reason = given
                }
                guard take(UInt8(ascii: "}")) else { return nil }
                rules.append((expression, reason))
            } else {
                guard let expression = string() else { return nil }
                rules.append((expression, ""))
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "]")) else { return nil }
        skipSpace()
        return index == bytes.count ? rules : nil
    }
}
