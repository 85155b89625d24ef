/// Erlang's term order on decoded JSON (jiffy's terms), as `lists:sort/1`
/// compares them: numbers (by value) < atoms (`false` < `null` < `true`, by
/// name) < objects (`{[…]}` tuples: by members, each by name then value) <
/// arrays (lists, element by element, a prefix first) < strings (binaries,
/// byte by byte).
package enum ErlangTermOrder {
    package static func compare(_ a: JSONValue, _ b: JSONValue) -> Int {
        let (rankA, rankB) = (rank(a), rank(b))
        if rankA != rankB { return rankA < rankB ? -1 : 1 }
        switch (a, b) {
        case let (.number(x, _), .number(y, _)):
            return x < y ? -1 : (x == y ? 0 : 1)
        case let (.string(x), .string(y)):
            return compareUTF8(x, y)
        case let (.array(x), .array(y)):
            for (left, right) in zip(x, y) {
                let order = compare(left, right)
                if order != 0 { return order }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case let (.object(x), .object(y)):
            for (left, right) in zip(x, y) {
                let name = compareUTF8(left.key, right.key)
                if name != 0 { return name }
                let order = compare(left.value, right.value)
                if order != 0 { return order }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        default:
            return 0
        }
    }

    /// Numbers, then the atoms false, null, true, then tuples, lists, binaries.
    private static func rank(_ value: JSONValue) -> Int {
        switch value {
        case .number: 0
        case .bool(false): 1
        case .null: 2
        case .bool(true): 3
        case .object: 4
        case .array: 5
        case .string: 6
        }
    }

    private static func compareUTF8(_ x: String, _ y: String) -> Int {
        var x = x
        var y = y
        return x.withUTF8 { x in y.withUTF8 { y in compareBytes(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) } }
    }
}
