/// Finds the value at a path of member names (and array positions) in JSON
/// text without parsing the rest: members before it are skipped, not built.
/// For reading a few fields of a stored document.
package enum JSONMemberLocator {
    /// What is at a path.
    package enum Lookup: Equatable {
        /// The value's bytes.
        case found(Range<Int>)
        /// An object on the way has no such member.
        case notFound
        /// The path goes through a value that is neither an object nor an
        /// array, or past the end of an array, or into an array by a name
        /// that is not a position.
        case badPath
    }

    /// The value at `path` in `bytes` (one JSON value), the first member of
    /// each name as CouchDB's `get_field` takes it.
    ///
    /// `assumingValid`: the text is known to be valid JSON (a stored
    /// document's), so the values passed on the way are skipped without
    /// being validated (``JSONLexer/skipValidValue()``), at a fraction of
    /// the cost; the lookup is the same.
    /// - Throws: When the text is not valid JSON on the way.
    package static func locate(_ path: [[UInt8]], in bytes: UnsafeRawBufferPointer,
                               assumingValid: Bool = false) throws(JSONParseError) -> Lookup {
        var lexer = JSONLexer(bytes)
        lexer.skipWhitespace()
        var valueStart = lexer.position
        for part in path {
            guard lexer.position < lexer.count else { throw lexer.unexpected() }
            switch lexer.byte(at: lexer.position) {
            case UInt8(ascii: "{"):
                lexer.position &+= 1
                lexer.skipWhitespace()
                if lexer.next(is: UInt8(ascii: "}")) { return .notFound }
                var found = false
                repeat {
                    let key = try lexer.skipKey()
                    lexer.skipWhitespace()
                    if keyEquals(key, part, in: &lexer) {
                        found = true
                        break
                    }
                    if assumingValid {
                        lexer.skipValidValue()
                    } else {
                        try lexer.skipValue(depth: 1, maximumDepth: JSONParser.defaultMaximumDepth)
                    }
                } while try lexer.skipElementSeparator(closing: UInt8(ascii: "}"))
                if !found { return .notFound }
            case UInt8(ascii: "["):
                guard let index = position(part) else { return .badPath }
                lexer.position &+= 1
                lexer.skipWhitespace()
                if lexer.next(is: UInt8(ascii: "]")) { return .badPath }
                var current = 0
                while current < index {
                    if assumingValid {
                        lexer.skipValidValue()
                    } else {
                        try lexer.skipValue(depth: 1, maximumDepth: JSONParser.defaultMaximumDepth)
                    }
                    guard try lexer.skipElementSeparator(closing: UInt8(ascii: "]")) else { return .badPath }
                    current += 1
                }
                lexer.skipWhitespace()
            default:
                return .badPath
            }
            valueStart = lexer.position
        }
        if assumingValid {
            lexer.skipValidValue()
        } else {
            try lexer.skipValue(depth: 1, maximumDepth: JSONParser.defaultMaximumDepth)
        }
        return .found(valueStart..<lexer.position)
    }

    /// Whether the key just read (`range` quote to quote) is `name`.
    private static func keyEquals(_ key: (range: Range<Int>, hasEscapes: Bool), _ name: [UInt8], in lexer: inout JSONLexer) -> Bool {
        let content = (key.range.lowerBound + 1)..<(key.range.upperBound - 1)
        if key.hasEscapes {
            return Array(lexer.decodeString(from: key.range.lowerBound, to: key.range.upperBound, hasEscapes: true).utf8) == name
        }
        guard content.count == name.count else { return false }
        var index = 0
        for offset in content {
            if lexer.byte(at: offset) != name[index] { return false }
            index += 1
        }
        return true
    }

    /// A path part as an array position (`list_to_integer/1`: an optional sign, digits).
    private static func position(_ part: [UInt8]) -> Int? {
        guard let index = Int(String(decoding: part, as: UTF8.self)), index >= 0 else { return nil }
        return index
    }
}
