/// Why and where JSON text was rejected.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, e.g. `unexpected character '}'` or `invalid UTF-8`.
    public var reason: String
    /// The byte offset of the offending byte (the input length for a premature end).
    public var offset: Int
    /// The 1-based line of `offset`; lines are separated by LF.
    public var line: Int
    /// The 1-based column of `offset`, counted in bytes.
    public var column: Int

    /// An error with an explicit position, e.g. to compare against in tests.
    public init(reason: String, offset: Int, line: Int, column: Int) {
        self.reason = reason
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// Builds an error at `offset`, working out its line and column from the input.
    ///
    /// Positions are only computed here, when an error is actually thrown, so
    /// the parsing loops need not track lines.
    package init(_ reason: String, at offset: Int, in bytes: UnsafeRawBufferPointer) {
        let offset = min(offset, bytes.count)
        var line = 1
        var lineStart = 0
        for index in 0..<offset where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        self.init(reason: reason, offset: offset, line: line, column: offset - lineStart + 1)
    }

    /// `"<reason> at line L, column C"`.
    public var description: String {
        "\(reason) at line \(line), column \(column)"
    }
}
