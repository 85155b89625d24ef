import SetteeCore

/// Percent-decoding of URL paths and query strings, byte by byte: text
/// without `%` (most segments and parameters) is taken as it is.
enum PercentDecoding {
    /// `text` with each `%XX` replaced by its byte, and `+` by a space when
    /// `plusIsSpace` (query strings); `nil` when a `%` is not followed by two
    /// hexadecimal digits or the bytes decoded are not UTF-8, as Foundation's
    /// `removingPercentEncoding` answers.
    static func decode(_ text: Substring, plusIsSpace: Bool = false) -> String? {
        let utf8 = text.utf8
        guard utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            utf8.formIndex(after: &index)
            switch byte {
            case UInt8(ascii: "%"):
                guard index != utf8.endIndex, let high = JSONLexer.hexValue(utf8[index]) else { return nil }
                utf8.formIndex(after: &index)
                guard index != utf8.endIndex, let low = JSONLexer.hexValue(utf8[index]) else { return nil }
                utf8.formIndex(after: &index)
                bytes.append(UInt8(high << 4 | low))
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
