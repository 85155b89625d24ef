import Foundation

/// Mango's `$regex`: patterns compiled once and shared (a selector is
/// compiled once per request, but the same few patterns come back request
/// after request), and matched within PCRE's match limit, as CouchDB
/// matches them with Erlang's `re`.
enum MangoRegex {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var compiled: [String: NSRegularExpression] = [:]

    static func compile(_ pattern: String) throws -> NSRegularExpression {
        if let known = lock.withLock({ compiled[pattern] }) { return known }
        let regex = try NSRegularExpression(pattern: pattern)
        lock.withLock {
            if compiled.count >= 256 { compiled.removeAll() }
            compiled[pattern] = regex
        }
        return regex
    }

    /// Steps of the match engine a `$regex` may take on a value: PCRE's
    /// default match limit (CouchDB matches with Erlang's `re`), plus a few
    /// per character so that a pattern that scans a long string once stays
    /// within it.
    private static func stepLimit(utf16Count: Int) -> Int { 10_000_000 + 64 * utf16Count }

    /// ICU calls the progress block once every this many steps of a match,
    /// and once for each position a match is tried at.
    private static let stepsPerProgress = 10_000

    /// Whether `regex` matches somewhere in `text`. A pattern that
    /// backtracks past ``stepLimit(utf16Count:)`` steps (`(a+)+$` against
    /// a run of `a`s and a `!`, which would take minutes) is no match, as
    /// PCRE's match limit makes it in CouchDB's `mango_selector`.
    static func matches(_ regex: NSRegularExpression, _ text: String) -> Bool {
        let length = text.utf16.count
        let progressLimit = length + 1 + stepLimit(utf16Count: length) / stepsPerProgress
        var found = false
        var progress = 0
        regex.enumerateMatches(in: text, options: [.reportProgress], range: NSRange(location: 0, length: length)) { result, _, stop in
            if result != nil {
                found = true
                stop.pointee = true
            } else {
                progress += 1
                if progress > progressLimit { stop.pointee = true }
            }
        }
        return found
    }
}
