import SetteeCore

/// CouchDB reads JSON with `jiffy`'s `dedupe_keys`: an object that has a key
/// more than once keeps only the last of those members, where the last one
/// stands (`{"a":1,"b":2,"a":3}` is `{"b":2,"a":3}`), at every depth. Keys
/// are the same when their decoded bytes are (`"a"` and `"\u0061"`).
/// Settee stores and hashes a document's body the same way, so that its
/// revision id is the one CouchDB gives it.
package enum JSONDuplicateKeys {
    /// `text` (valid JSON) without its objects' duplicate keys, written
    /// without whitespace between tokens; the rest of its text is as given.
    package static func removed(from text: [UInt8]) -> [UInt8] {
        text.withUnsafeBufferPointer { bytes in
            guard let start = bytes.baseAddress else { return text }
            var reader = Reader(position: start, end: start + bytes.count)
            var out: [UInt8] = []
            out.reserveCapacity(text.count)
            reader.value(into: &out)
            return out
        }
    }

    private struct Reader {
        var position: UnsafePointer<UInt8>
        let end: UnsafePointer<UInt8>

        mutating func skipSpace() {
            while position < end, isJSONWhitespace(position.pointee) { position += 1 }
        }

        mutating func value(into out: inout [UInt8]) {
            skipSpace()
            guard position < end else { return }
            switch position.pointee {
            case UInt8(ascii: "{"): object(into: &out)
            case UInt8(ascii: "["): array(into: &out)
            case UInt8(ascii: "\""):
                let start = position
                skipString()
                out.append(contentsOf: UnsafeBufferPointer(start: start, count: position - start))
            default:
                // A number, true, false or null: up to the next delimiter.
                let start = position
                while position < end {
                    let byte = position.pointee
                    if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") || isJSONWhitespace(byte) { break }
                    position += 1
                }
                out.append(contentsOf: UnsafeBufferPointer(start: start, count: position - start))
            }
        }

        mutating func array(into out: inout [UInt8]) {
            position += 1
            out.append(UInt8(ascii: "["))
            var first = true
            while true {
                skipSpace()
                guard position < end else { break }
                if position.pointee == UInt8(ascii: "]") {
                    position += 1
                    break
                }
                if position.pointee == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                value(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }

        mutating func object(into out: inout [UInt8]) {
            position += 1
            // Each member's decoded key and its text (`"key":value`).
            var members: [(key: [UInt8], text: [UInt8])] = []
            while true {
                skipSpace()
                guard position < end else { break }
                if position.pointee == UInt8(ascii: "}") {
                    position += 1
                    break
                }
                if position.pointee == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                let keyStart = position
                skipString()
                var text = Array(UnsafeBufferPointer(start: keyStart, count: position - keyStart))
                text.append(UInt8(ascii: ":"))
                skipSpace()
                position += 1  // the colon
                value(into: &text)
                members.append((Self.decodedKey(from: keyStart, to: position), text))
            }
            var seen = Set<[UInt8]>()
            var kept: [[UInt8]] = []
            for member in members.reversed() where seen.insert(member.key).inserted { kept.append(member.text) }
            out.append(UInt8(ascii: "{"))
            for (index, text) in kept.reversed().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: text)
            }
            out.append(UInt8(ascii: "}"))
        }

        /// Moves past the string at `position` (its opening quote).
        mutating func skipString() {
            position += 1
            while position < end {
                let byte = position.pointee
                position += 1
                if byte == UInt8(ascii: "\"") { return }
                if byte == UInt8(ascii: "\\") { position += 1 }
            }
        }

        /// The decoded bytes of the key whose string starts at `start`.
        static func decodedKey(from start: UnsafePointer<UInt8>, to end: UnsafePointer<UInt8>) -> [UInt8] {
            var buffer = TermBuffer(capacity: end - start)
            var writer = JSONTermWriter(at: start, end: end)
            let key = writer.string(into: &buffer)
            return Array(UnsafeBufferPointer(start: buffer.base + key.offset, count: key.count))
        }
    }
}
