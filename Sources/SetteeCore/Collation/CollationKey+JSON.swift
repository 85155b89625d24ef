extension CollationKey {
    /// Appends the encoding of the JSON text `json` to `out`, exactly as
    /// `append(JSONParser.parse(json), mode:to:)` would, but straight from the
    /// UTF-8 text without building a `JSONValue` tree: map functions' emitted keys
    /// arrive as JSON text, and this is on the indexing hot path.
    ///
    /// Validation is `JSONParser`'s (same lexer, same rules, same errors), with its
    /// default depth limit; the encoder is iterative, so deep input ends in the
    /// depth error rather than a stack overflow. On error `out` is left as it was.
    package static func append(
        json: UnsafeRawBufferPointer,
        mode: CollationMode,
        maximumDepth: Int = JSONParser.defaultMaximumDepth,
        to out: inout [UInt8]
    ) throws(JSONParseError) {
        let start = out.count
        do {
            try appendJSON(json, mode: mode, maximumDepth: maximumDepth, to: &out)
        } catch {
            out.removeSubrange(start...)
            throw error
        }
    }

    /// The encoding of the JSON text `json`.
    package static func encode(json: UnsafeRawBufferPointer, mode: CollationMode) throws(JSONParseError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count &* 3 &+ 16)
        try appendJSON(json, mode: mode, maximumDepth: JSONParser.defaultMaximumDepth, to: &out)
        return out
    }

    /// The encoding of the JSON text `json`.
    package static func encode(json: String, mode: CollationMode) throws(JSONParseError) -> [UInt8] {
        var json = json
        let result = json.withUTF8 { utf8 in
            Result { () throws(JSONParseError) in try encode(json: UnsafeRawBufferPointer(utf8), mode: mode) }
        }
        return try result.get()
    }

    private static func appendJSON(
        _ json: UnsafeRawBufferPointer,
        mode: CollationMode,
        maximumDepth: Int,
        to out: inout [UInt8]
    ) throws(JSONParseError) {
        let tags = Tags(mode)
        var lexer = JSONLexer(json)
        var open = ContainerStack()

        nextValue: while true {
            lexer.skipWhitespace()
            guard lexer.position < lexer.count else { throw lexer.unexpected() }
            switch lexer.byte(at: lexer.position) {
            case UInt8(ascii: "["):
                guard open.depth < maximumDepth else { throw lexer.depthError(maximumDepth) }
                lexer.position &+= 1
                out.append(tags.array)
                lexer.skipWhitespace()
                if lexer.next(is: UInt8(ascii: "]")) {
                    lexer.position &+= 1
                    out.append(endMarker)
                } else {
                    open.push(isObject: false)
                    continue nextValue
                }
            case UInt8(ascii: "{"):
                guard open.depth < maximumDepth else { throw lexer.depthError(maximumDepth) }
                lexer.position &+= 1
                out.append(tags.object)
                lexer.skipWhitespace()
                if lexer.next(is: UInt8(ascii: "}")) {
                    lexer.position &+= 1
                    out.append(endMarker)
                } else {
                    open.push(isObject: true)
                    try appendKey(&lexer, mode: mode, tag: tags.string, to: &out)
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                let start = lexer.position
                let hasEscapes = try lexer.skipString()
                appendString(lexer, from: start, to: lexer.position, hasEscapes: hasEscapes, mode: mode, tag: tags.string, to: &out)
            case UInt8(ascii: "t"):
                try lexer.skipLiteral("true")
                out.append(tags.true)
            case UInt8(ascii: "f"):
                try lexer.skipLiteral("false")
                out.append(tags.false)
            case UInt8(ascii: "n"):
                try lexer.skipLiteral("null")
                out.append(tags.null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                appendNumber(try lexer.scanNumber(materialize: true), tag: tags.number, to: &out)
            default:
                throw lexer.unexpected()
            }

            // A value ended: continue or close the containers around it.
            while open.depth > 0 {
                lexer.skipWhitespace()
                guard lexer.position < lexer.count else { throw lexer.unexpected() }
                let next = lexer.byte(at: lexer.position)
                let isObject = open.topIsObject
                if next == UInt8(ascii: ",") {
                    lexer.position &+= 1
                    if isObject { try appendKey(&lexer, mode: mode, tag: tags.string, to: &out) }
                    continue nextValue
                }
                guard next == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { throw lexer.unexpected() }
                lexer.position &+= 1
                out.append(endMarker)
                open.pop()
            }
            try lexer.expectEnd()
            return
        }
    }

    /// Reads an object key and its colon, and appends the key as a string.
    @inline(__always)
    private static func appendKey(
        _ lexer: inout JSONLexer,
        mode: CollationMode,
        tag: UInt8,
        to out: inout [UInt8]
    ) throws(JSONParseError) {
        let key = try lexer.skipKey()
        appendString(lexer, from: key.range.lowerBound, to: key.range.upperBound, hasEscapes: key.hasEscapes,
                     mode: mode, tag: tag, to: &out)
    }

    /// Appends the string validated by the lexer between the quote at `start` and
    /// the one just before `end`.
    @inline(__always)
    private static func appendString(
        _ lexer: JSONLexer,
        from start: Int,
        to end: Int,
        hasEscapes: Bool,
        mode: CollationMode,
        tag: UInt8,
        to out: inout [UInt8]
    ) {
        if hasEscapes {
            // Rare: decode exactly as the parser does.
            appendString(lexer.decodeString(from: start, to: end, hasEscapes: true), mode: mode, tag: tag, to: &out)
        } else {
            // Already valid UTF-8: use the bytes in place.
            let content = UnsafeRawBufferPointer(start: lexer.base + (start &+ 1), count: end &- start &- 2)
            appendString(content, mode: mode, tag: tag, to: &out)
        }
    }
}

