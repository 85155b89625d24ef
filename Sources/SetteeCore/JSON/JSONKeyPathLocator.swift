/// Finds the line on which a member of a JSON text is written, for error
/// messages that point into a file (the parsed ``JSONValue`` keeps no positions).
package enum JSONKeyPathLocator {
    /// The 1-based line of the key that ends `path` (`["views", "by_city", "map"]`),
    /// found as the first key named `path[0]`, then the first key named `path[1]`
    /// after it, and so on; nil when one is missing.
    package static func line(of path: [String], in text: some Collection<UInt8>) -> Int? {
        let bytes = Array(text)
        var wanted = path.makeIterator()
        guard var key = wanted.next() else { return nil }
        var line = 1
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") { line += 1 }
            guard byte == UInt8(ascii: "\"") else {
                index += 1
                continue
            }
            // A string: its raw content, up to the closing quote (no newline can occur inside one).
            let start = index + 1
            index = start
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            let content = bytes[start..<min(index, bytes.count)]
            index += 1
            var next = index
            while next < bytes.count, [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n")].contains(bytes[next]) {
                next += 1
            }
            guard next < bytes.count, bytes[next] == UInt8(ascii: ":"), content.elementsEqual(key.utf8) else { continue }
            guard let following = wanted.next() else { return line }
            key = following
        }
        return nil
    }
}
