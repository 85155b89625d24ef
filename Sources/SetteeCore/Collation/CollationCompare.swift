import Foundation
import CSetteeCollation

extension CollationKey {
    /// The reference comparator: CouchDB's order computed directly on the values,
    /// as `couch_ejson_compare` does (ICU's `strcoll` for strings in unicode mode,
    /// Erlang term order in raw mode). Returns -1, 0 or 1.
    ///
    /// Used to check the encoding and to validate queries (e.g. `startkey` after
    /// `endkey`). Iterative, so any nesting depth is fine.
    package static func compare(_ a: JSONValue, _ b: JSONValue, mode: CollationMode) -> Int {
        // Two strings, the common case (a selector's condition on a document's value): compared directly.
        if case .string(let x) = a, case .string(let y) = b { return compareStrings(x, y, mode: mode) }
        let tags = Tags(mode)
        var stack: [CompareFrame] = []
        var left = a
        var right = b
        while true {
            let leftRank = rank(left, tags)
            let rightRank = rank(right, tags)
            if leftRank != rightRank { return leftRank < rightRank ? -1 : 1 }
            switch (left, right) {
            case let (.number(x, xLiteral), .number(y, yLiteral)):
                let result = NumberOrder.compare(x, xLiteral, y, yLiteral)
                if result != 0 { return result }
            case let (.string(x), .string(y)):
                let result = compareStrings(x, y, mode: mode)
                if result != 0 { return result }
            case let (.array(x), .array(y)):
                stack.append(.arrays(x, y, 0))
            case let (.object(x), .object(y)):
                stack.append(.objects(x, y, 0))
            default:
                break  // null, false, true: equal ranks are equal values
            }

            // The next pair to compare; two exhausted containers are equal so far.
            nextPair: while true {
                guard let frame = stack.popLast() else { return 0 }
                switch frame {
                case let .arrays(x, y, index):
                    if index == x.count || index == y.count {
                        if x.count == y.count { continue nextPair }
                        return index == x.count ? -1 : 1
                    }
                    stack.append(.arrays(x, y, index &+ 1))
                    left = x[index]
                    right = y[index]
                    break nextPair
                case let .objects(x, y, index):
                    if index == x.count || index == y.count {
                        if x.count == y.count { continue nextPair }
                        return index == x.count ? -1 : 1
                    }
                    let keys = compareStrings(x[index].key, y[index].key, mode: mode)
                    if keys != 0 { return keys }
                    stack.append(.objects(x, y, index &+ 1))
                    left = x[index].value
                    right = y[index].value
                    break nextPair
                }
            }
        }
    }

    private enum CompareFrame {
        case arrays([JSONValue], [JSONValue], Int)
        case objects([(key: String, value: JSONValue)], [(key: String, value: JSONValue)], Int)
    }

    /// A value's place in the mode's type order: its tag.
    private static func rank(_ value: JSONValue, _ tags: Tags) -> UInt8 {
        switch value {
        case .null: tags.null
        case .bool(let flag): flag ? tags.true : tags.false
        case .number: tags.number
        case .string: tags.string
        case .array: tags.array
        case .object: tags.object
        }
    }

    /// ICU's root collator in unicode mode, code points (UTF-8 bytes) in raw mode.
    package static func compareStrings(_ x: String, _ y: String, mode: CollationMode) -> Int {
        var x = x
        var y = y
        return x.withUTF8 { xBytes in
            y.withUTF8 { yBytes in
                // The same bytes are the same string in either order (a selector's
                // equality on the value an index found): no collator needed.
                if xBytes.count == yBytes.count && (xBytes.count == 0 || memcmp(xBytes.baseAddress!, yBytes.baseAddress!, xBytes.count) == 0) {
                    return 0
                }
                switch mode {
                case .unicode:
                    let result = settee_collation_compare(
                        UnsafeRawPointer(xBytes.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                        xBytes.count,
                        UnsafeRawPointer(yBytes.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                        yBytes.count)
                    return result < 0 ? -1 : result > 0 ? 1 : 0
                case .raw:
                    let common = min(xBytes.count, yBytes.count)
                    for index in 0..<common where xBytes[index] != yBytes[index] {
                        return xBytes[index] < yBytes[index] ? -1 : 1
                    }
                    return xBytes.count < yBytes.count ? -1 : xBytes.count > yBytes.count ? 1 : 0
                }
            }
        }
    }
}
