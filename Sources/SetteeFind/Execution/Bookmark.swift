import SetteeCore

/// Where a page of `find` results ended: the last result's index key and
/// document id, as an opaque base64url string: CouchDB's own form
/// (``BookmarkTerm``), so that a bookmark from CouchDB resumes in Settee and
/// one from Settee in CouchDB, for the same index.
struct Bookmark: Equatable {
    var key: JSONValue
    var id: String

    /// The string a result hands out: CouchDB's `[{startkey_docid, Id}, {startkey, Key}]`
    /// term, in base64url without padding.
    var encoded: String {
        Self.base64URL(BookmarkTerm.encode(key: key, id: id))
    }

    /// Decodes a bookmark: CouchDB's form, or Settee's earlier one (`[key, id]`
    /// as JSON in base64url), which clients may still hold.
    /// - Throws: CouchDB's `invalid_bookmark` for anything else.
    init(decoding text: String) throws(MangoError) {
        let invalid = MangoError(error: "invalid_bookmark", reason: "Invalid bookmark value: \(JSONValue.string(text).jsonText)")
        guard let bytes = Self.bytes(base64: text) else { throw invalid }
        if let (key, id) = BookmarkTerm.decode(bytes) {
            self.key = key
            self.id = id
            return
        }
        guard case .array(let pair)? = try? JSONParser.parse(bytes), pair.count == 2, case .string(let id) = pair[1] else { throw invalid }
        key = pair[0]
        self.id = id
    }

    init(key: JSONValue, id: String) {
        self.key = key
        self.id = id
    }

    // Written out here: Foundation's base64 and `replacingOccurrences` for the
    // URL alphabet cost a `find` of one document about a third of its time.

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` in base64url, without padding.
    static func base64URL(_ bytes: [UInt8]) -> String {
        let length = (bytes.count * 4 + 2) / 3
        return bytes.withUnsafeBufferPointer { bytes in
            alphabet.withUnsafeBufferPointer { alphabet in
                String(unsafeUninitializedCapacity: length) { out in
                    var position = 0
                    func append(_ group: UInt32, characters: Int) {
                        for shift in stride(from: 18, to: 18 - 6 * characters, by: -6) {
                            out[position] = alphabet[Int(group >> UInt32(shift) & 63)]
                            position += 1
                        }
                    }
                    var index = 0
                    while index + 3 <= bytes.count {
                        append(UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]), characters: 4)
                        index += 3
                    }
                    switch bytes.count - index {
                    case 1: append(UInt32(bytes[index]) << 16, characters: 2)
                    case 2: append(UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8, characters: 3)
                    default: break
                    }
                    return position
                }
            }
        }
    }

    /// The bytes of base64 text, in the URL alphabet or the standard one,
    /// padded or not; nil for anything else.
    static func bytes(base64 text: String) -> [UInt8]? {
        var sextets: [UInt8] = []
        sextets.reserveCapacity(text.utf8.count)
        var padding = 0
        for character in text.utf8 {
            if character == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            // Nothing after the padding.
            guard padding == 0 else { return nil }
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): sextets.append(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): sextets.append(character - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sextets.append(character - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "-"), UInt8(ascii: "+"): sextets.append(62)
            case UInt8(ascii: "_"), UInt8(ascii: "/"): sextets.append(63)
            default: return nil
            }
        }
        let rest = sextets.count % 4
        guard rest != 1, padding == 0 || (sextets.count + padding) % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(sextets.count * 3 / 4)
        var index = 0
        while index + 4 <= sextets.count {
            let group = UInt32(sextets[index]) << 18 | UInt32(sextets[index + 1]) << 12 | UInt32(sextets[index + 2]) << 6 | UInt32(sextets[index + 3])
            out.append(UInt8(group >> 16 & 255))
            out.append(UInt8(group >> 8 & 255))
            out.append(UInt8(group & 255))
            index += 4
        }
        if rest >= 2 {
            let group = UInt32(sextets[index]) << 18 | UInt32(sextets[index + 1]) << 12 | (rest == 3 ? UInt32(sextets[index + 2]) << 6 : 0)
            out.append(UInt8(group >> 16 & 255))
            if rest == 3 { out.append(UInt8(group >> 8 & 255)) }
        }
        return out
    }
}
