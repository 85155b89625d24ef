package import SetteeCore
import SetteeJavaScript
/// One line of the query-server protocol, `[name, argument, …]`, split into its
/// elements' bytes without building values: documents go to the engine as the
/// text CouchDB sent.
package struct QueryServerCommand {
    package let line: UnsafeRawBufferPointer
    /// The command name, or `nil` when the first element is not a string.
    package let name: String?
    /// The first element's JSON text when it is not a string (for messages).
    package let nameText: String
    /// The arguments after the name, as byte ranges of `line`.
    package let arguments: [Range<Int>]

    /// - Throws: When the line is not one valid JSON array.
    package init(_ line: UnsafeRawBufferPointer) throws(JSONParseError) {
        self.line = line
        let elements = try Self.elements(ofArray: line)
        if let first = elements.first, case .string(let name) = try JSONParser.parse(UnsafeRawBufferPointer(rebasing: line[first])) {
            self.name = name
            nameText = name
        } else {
            name = nil
            nameText = elements.first.map { String(decoding: UnsafeRawBufferPointer(rebasing: line[$0]), as: UTF8.self) } ?? "undefined"
        }
        arguments = Array(elements.dropFirst())
    }

    /// The bytes of argument `index`, or `nil` when there are fewer arguments.
    package func argument(_ index: Int) -> UnsafeRawBufferPointer? {
        index < arguments.count ? UnsafeRawBufferPointer(rebasing: line[arguments[index]]) : nil
    }

    /// Argument `index` as a value, or `nil` when there are fewer arguments.
    package func value(_ index: Int) throws(JSONParseError) -> JSONValue? {
        guard let bytes = argument(index) else { return nil }
        return try JSONParser.parse(bytes)
    }

    /// The byte ranges of the elements of `bytes`, which must be exactly one
    /// JSON array; nested values are validated but not built.
    package static func elements(ofArray bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> [Range<Int>] {
        var lexer = JSONLexer(bytes)
        lexer.skipWhitespace()
        guard lexer.next(is: UInt8(ascii: "[")) else { throw lexer.unexpected() }
        lexer.position &+= 1
        lexer.skipWhitespace()
        var ranges: [Range<Int>] = []
        if lexer.next(is: UInt8(ascii: "]")) {
            lexer.position &+= 1
        } else {
            repeat {
                lexer.skipWhitespace()
                let start = lexer.position
                try lexer.skipValue(depth: 1, maximumDepth: JSONParser.defaultMaximumDepth)
                ranges.append(start..<lexer.position)
            } while try lexer.skipElementSeparator(closing: UInt8(ascii: "]"))
        }
        try lexer.expectEnd()
        return ranges
    }
}
