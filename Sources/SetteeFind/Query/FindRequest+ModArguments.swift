import SetteeCore

extension FindRequest {
    /// Refuses a `$mod` whose divisor or remainder is written as a fraction
    /// or with an exponent (`[5.0, 1]`, `[1e1, 0]`), as CouchDB refuses it:
    /// CouchDB's JSON decoder reads such a number as a float, and `$mod`
    /// takes two integers (`mango_selector:norm_ops/1`). A parsed
    /// ``JSONValue`` holds `5.0` and `5` alike, so this reads the request's
    /// text, before it is parsed.
    /// - Parameter text: A `_find` or `_explain` request body, JSON.
    /// - Throws: CouchDB's `bad_arg` for `$mod`.
    package static func refuseFractionalModArguments(jsonText text: [UInt8]) throws(MangoError) {
        let key = Array(#""$mod""#.utf8)
        var index = 0
        while index < text.count {
            let byte = text[index]
            guard byte == UInt8(ascii: "\"") else {
                index += 1
                continue
            }
            // A string: is it the key "$mod"?
            let isModKey = text[index...].starts(with: key)
            index = endOfString(text, from: index)
            guard isModKey else { continue }
            var position = skipWhitespace(text, from: index)
            guard position < text.count, text[position] == UInt8(ascii: ":") else { continue }
            position = skipWhitespace(text, from: position + 1)
            guard position < text.count, text[position] == UInt8(ascii: "[") else { continue }
            // The array's elements, while they are numbers.
            var numbers: [String] = []
            var fractional = false
            position = skipWhitespace(text, from: position + 1)
            while position < text.count, text[position] == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[position]) {
                let start = position
                while position < text.count, Self.numberBytes.contains(text[position]) { position += 1 }
                let number = String(decoding: text[start..<position], as: UTF8.self)
                if number.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { fractional = true }
                numbers.append(number)
                position = skipWhitespace(text, from: position)
                guard position < text.count, text[position] == UInt8(ascii: ",") else { break }
                position = skipWhitespace(text, from: position + 1)
            }
            guard fractional, position < text.count, text[position] == UInt8(ascii: "]") else { continue }
            let written = numbers.map(Self.erlangNumber).joined(separator: ",")
            throw MangoError(error: "bad_arg", reason: "Bad argument for operator $mod: [\(written)]")
        }
    }

    private static let numberBytes = Set("0123456789+-.eE".utf8)

    /// A number as Erlang's `~w` writes it: a float with its point (`5.0`).
    private static func erlangNumber(_ text: String) -> String {
        guard text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let value = Double(text) else { return text }
        if value.rounded() == value, abs(value) < 1e15 { return "\(Int(value)).0" }
        return "\(value)"
    }

    /// The index after the string starting at `start` (its opening quote).
    private static func endOfString(_ text: [UInt8], from start: Int) -> Int {
        var index = start + 1
        while index < text.count {
            switch text[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return index
    }

    private static func skipWhitespace(_ text: [UInt8], from start: Int) -> Int {
        var index = start
        while index < text.count, [0x20, 0x09, 0x0A, 0x0D].contains(text[index]) { index += 1 }
        return index
    }
}
