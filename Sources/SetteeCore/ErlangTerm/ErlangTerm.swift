/// A JSON value as CouchDB's Erlang code sees it ("EJSON"), for the few places
/// where CouchDB's built-in reducers show an Erlang term to the user: the
/// `_stats` error messages (`~p` and `~w` formatting) and the ordering
/// `lists:sort/1` gives object members inside `_sum`.
///
/// The mapping is jiffy's: `null`, `true` and `false` are atoms, strings are
/// binaries, arrays are lists, an object is `{[{Key, Value}, …]}` (a 1-tuple
/// around a list of 2-tuples). A number is an integer when jiffy would decode it
/// as one, i.e. when JavaScript writes it without a decimal point or exponent
/// (integral and below 1e21 in magnitude), and a float otherwise.
///
/// Not the bytes of Erlang's external term format, which revision ids hash:
/// those are written straight from a document's JSON by `ErlangExternalTerm`
/// in SetteeStorage, with no term in memory.
package indirect enum ErlangTerm: Sendable, Equatable {
    case integer(Double)
    case float(Double)
    case atom(String)
    case binary([UInt8])
    case list([ErlangTerm])
    case tuple([ErlangTerm])

    package init(_ json: JSONValue) {
        switch json {
        case .null: self = .atom("null")
        case .bool(let flag): self = .atom(flag ? "true" : "false")
        case .number(let number, _): self = ErlangNumber(json: number).term
        case .string(let text): self = .binary(Array(text.utf8))
        case .array(let elements): self = .list(elements.map(ErlangTerm.init))
        case .object(let members): self = .tuple([ErlangTerm.proplist(members)])
        }
    }

    /// An object's members as the list of `{Key, Value}` pairs inside its tuple.
    package static func proplist(_ members: [(key: String, value: JSONValue)]) -> ErlangTerm {
        .list(members.map { .tuple([.binary(Array($0.key.utf8)), ErlangTerm($0.value)]) })
    }
}

/// An Erlang number: an integer or a float, both held as a `Double`.
///
/// Arithmetic follows Erlang's typing (integer op integer is an integer,
/// anything with a float is a float) so that error messages print numbers the
/// way CouchDB does (`3` versus `3.0`).
package struct ErlangNumber: Sendable, Equatable {
    package var value: Double
    package var isInteger: Bool

    /// A number decoded from JSON: an integer when JavaScript would write it
    /// without a decimal point or exponent.
    package init(json value: Double) {
        self.value = value
        self.isInteger = value.isFinite && value.rounded(.towardZero) == value && value.magnitude < 1e21
    }

    package init(value: Double, isInteger: Bool) {
        self.value = value
        self.isInteger = isInteger
    }

    package static let zero = ErlangNumber(value: 0, isInteger: true)
    package static let one = ErlangNumber(value: 1, isInteger: true)

    package var term: ErlangTerm { isInteger ? .integer(value) : .float(value) }

    package static func + (lhs: ErlangNumber, rhs: ErlangNumber) -> ErlangNumber {
        ErlangNumber(value: lhs.value + rhs.value, isInteger: lhs.isInteger && rhs.isInteger)
    }

    package static func * (lhs: ErlangNumber, rhs: ErlangNumber) -> ErlangNumber {
        ErlangNumber(value: lhs.value * rhs.value, isInteger: lhs.isInteger && rhs.isInteger)
    }

    /// `erlang:min/2`: the first argument when the two compare equal.
    package static func erlangMin(_ a: ErlangNumber, _ b: ErlangNumber) -> ErlangNumber { b.value < a.value ? b : a }

    /// `erlang:max/2`: the first argument when the two compare equal.
    package static func erlangMax(_ a: ErlangNumber, _ b: ErlangNumber) -> ErlangNumber { b.value > a.value ? b : a }
}

// MARK: - Term order

extension JSONValue {
    /// Compares two values in Erlang's standard term order of their EJSON forms:
    /// number < atom (`false` < `null` < `true`) < tuple (object) < list (array)
    /// < binary (string); numbers by value (``NumberOrder``), strings byte by byte, arrays and
    /// objects element by element with a shorter prefix first.
    package static func erlangOrder(_ a: JSONValue, _ b: JSONValue) -> Int {
        func rank(_ value: JSONValue) -> Int {
            switch value {
            case .number: return 0
            case .null, .bool: return 1
            case .object: return 2
            case .array: return 3
            case .string: return 4
            }
        }
        func atomName(_ value: JSONValue) -> String {
            switch value {
            case .bool(let flag): return flag ? "true" : "false"
            default: return "null"
            }
        }
        let rankA = rank(a), rankB = rank(b)
        if rankA != rankB { return rankA < rankB ? -1 : 1 }
        switch (a, b) {
        case let (.number(x, xLiteral), .number(y, yLiteral)):
            return NumberOrder.compare(x, xLiteral, y, yLiteral)
        case let (.string(x), .string(y)):
            return compareBytes(x, y)
        case let (.array(x), .array(y)):
            for (left, right) in zip(x, y) {
                let order = erlangOrder(left, right)
                if order != 0 { return order }
            }
            return x.count < y.count ? -1 : (x.count > y.count ? 1 : 0)
        case let (.object(x), .object(y)):
            for (left, right) in zip(x, y) {
                let keyOrder = compareBytes(left.key, right.key)
                if keyOrder != 0 { return keyOrder }
                let valueOrder = erlangOrder(left.value, right.value)
                if valueOrder != 0 { return valueOrder }
            }
            return x.count < y.count ? -1 : (x.count > y.count ? 1 : 0)
        default:
            return compareBytes(atomName(a), atomName(b))
        }
    }

    /// Byte-wise comparison of the UTF-8 forms, as Erlang compares binaries.
    package static func compareBytes(_ a: String, _ b: String) -> Int {
        var a = a
        var b = b
        return a.withUTF8 { a in b.withUTF8 { b in SetteeCore.compareBytes(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) } }
    }

    /// Whether two strings are the same binary (byte-identical UTF-8), unlike
    /// Swift's `==`, which also equates canonically equivalent strings.
    package static func sameBytes(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }
}

// MARK: - Formatting

/// Erlang's `io_lib:format` directives `~w` (`io_lib:write/1`) and `~p`
/// (`io_lib_pretty`, line length 80, latin1, strings detected), for the terms
/// `ErlangTerm` can hold. Output is Latin-1 characters, one byte each, as
/// `iolist_to_binary/1` turns them into a binary; CouchDB then sends that
/// binary as a JSON string, so a binary's UTF-8 bytes come out unchanged.
package enum ErlangFormat {
    /// `~w`: the term on one line; binaries as `<<97,98>>`, lists never as strings.
    package static func write(_ term: ErlangTerm) -> [UInt8] {
        var out: [UInt8] = []
        write(term, into: &out)
        return out
    }

    private static func write(_ term: ErlangTerm, into out: inout [UInt8]) {
        switch term {
        case .integer(let value): out += integerText(value)
        case .float(let value): out += floatText(value)
        case .atom(let name): out += Array(name.utf8)
        case .binary(let bytes): out += binaryBytesText(bytes)
        case .list(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .tuple(let elements):
            out.append(UInt8(ascii: "{"))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `<<1,2,3>>`, as `io_lib:write_binary/2` writes every binary.
    private static func binaryBytesText(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = Array("<<".utf8)
        for (index, byte) in bytes.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += Array(String(byte).utf8)
        }
        out += Array(">>".utf8)
        return out
    }

    /// An integer's decimal digits.
    package static func integerText(_ value: Double) -> [UInt8] {
        if value.magnitude < 9.2e18 { return Array(String(Int64(value)).utf8) }
        // Beyond Int64 Erlang has bignums; a Double only approximates them anyway.
        var bytes: [UInt8] = []
        JSONWriter.writeNumber(value, into: &bytes)
        return bytes
    }

    /// `io_lib_format:fwrite_g/1`: the shortest round-trip digits, laid out by
    /// its `insert_decimal/3` (`1.5`, `100.0`, `1.0e3`, `0.001`, `1.0e-4`, `1.0e21`).
    package static func floatText(_ value: Double) -> [UInt8] {
        if value == 0 { return Array((value.sign == .minus ? "-0.0" : "0.0").utf8) }
        guard value.isFinite else { return Array("nan".utf8) }  // cannot come from JSON
        // Shortest digits and the exponent of the last digit, from Swift's description.
        var digits: [UInt8] = []
        var integerDigitCount: Int?
        var exponent = 0
        var text = Array(value.magnitude.description.utf8)[...]
        while let byte = text.popFirst() {
            if byte == UInt8(ascii: ".") {
                integerDigitCount = digits.count
            } else if byte == UInt8(ascii: "e") {
                exponent = Int(String(decoding: text, as: UTF8.self)) ?? 0
                break
            } else {
                digits.append(byte)
            }
        }
        var place = (integerDigitCount ?? digits.count) - digits.count + exponent
        while digits.count > 1, digits.first == UInt8(ascii: "0") { digits.removeFirst() }
        while digits.count > 1, digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            place += 1
        }
        let s = digits
        let l = s.count
        let exp = place + l - 1
        let expText = Array(String(exp).utf8)
        let expCost = expText.count + 2
        var out: [UInt8] = value < 0 ? [UInt8(ascii: "-")] : []
        func insertExp() {
            out.append(s[0])
            out.append(UInt8(ascii: "."))
            if l == 1 { out.append(UInt8(ascii: "0")) } else { out += s[1...] }
            out.append(UInt8(ascii: "e"))
            out += expText
        }
        if place < 0 {
            if exp >= 0 {
                out += s[..<(l + place)]
                out.append(UInt8(ascii: "."))
                out += s[(l + place)...]
            } else if 2 - place - l <= expCost {
                out += Array("0.".utf8)
                out += repeatElement(UInt8(ascii: "0"), count: -place - l)
                out += s
            } else {
                insertExp()
            }
        } else {
            let dot = l == 1 ? 1 : 0
            if expCost + dot >= place + 2 && value.magnitude < 9_007_199_254_740_992 {
                out += s
                out += repeatElement(UInt8(ascii: "0"), count: place)
                out += Array(".0".utf8)
            } else {
                insertExp()
            }
        }
        return out
    }

    // MARK: ~p

    /// `~p` as `io_lib:format/2` prints it when `column - 1` characters of the
    /// line precede it: on one line if it fits in 80 columns, otherwise broken
    /// over lines as `io_lib_pretty` does for lists, untagged tuples and binaries.
    package static func print(_ term: ErlangTerm, column: Int) -> [UInt8] {
        let lineLength = 80
        let item = printLength(term)
        let col = max(column, 1)
        if item.length < lineLength - col { return write(item) }
        return pp(item, col: col, ll: lineLength, m: item.length, ind: spaces(col - 1), ld: 0, w: 0)
    }

    /// io_lib_pretty's intermediate format: each node with its one-line length.
    private struct Item {
        indirect enum Kind {
            /// Text that is never broken (numbers, atoms, strings, printable binaries).
            case atomic([UInt8])
            /// A binary that is not printable, as `<<1,2,3>>` with its byte texts.
            case bin([[UInt8]])
            case list([Item])
            case tuple([Item])
        }

        var kind: Kind
        var length: Int

        var isAtomic: Bool {
            if case .atomic = kind { return true }
            return false
        }
    }

    private static func printLength(_ term: ErlangTerm) -> Item {
        switch term {
        case .integer, .float, .atom:
            let text = write(term)
            return Item(kind: .atomic(text), length: text.count)
        case .list(let elements):
            if elements.isEmpty { return Item(kind: .atomic(Array("[]".utf8)), length: 2) }
            if let characters = printableList(elements) {
                let text = quotedString(characters)
                return Item(kind: .atomic(text), length: text.count)
            }
            let items = elements.map(printLength)
            return Item(kind: .list(items), length: 2 + items.reduce(0) { $0 + $1.length } + items.count - 1)
        case .tuple(let elements):
            if elements.isEmpty { return Item(kind: .atomic(Array("{}".utf8)), length: 2) }
            let items = elements.map(printLength)
            return Item(kind: .tuple(items), length: 2 + items.reduce(0) { $0 + $1.length } + items.count - 1)
        case .binary(let bytes):
            if bytes.isEmpty { return Item(kind: .atomic(Array("<<>>".utf8)), length: 4) }
            if bytes.allSatisfy(isPrintableLatin1) {
                let text = Array("<<".utf8) + quotedString(bytes) + Array(">>".utf8)
                return Item(kind: .atomic(text), length: text.count)
            }
            let pieces = bytes.map { Array(String($0).utf8) }
            return Item(kind: .bin(pieces), length: 4 + pieces.reduce(0) { $0 + $1.count } + pieces.count - 1)
        }
    }

    /// The characters of a list that `io_lib:printable_latin1_list/1` accepts.
    private static func printableList(_ elements: [ErlangTerm]) -> [UInt8]? {
        var characters: [UInt8] = []
        for element in elements {
            guard case .integer(let value) = element, value >= 0, value <= 255,
                  isPrintableLatin1(UInt8(value)) else { return nil }
            characters.append(UInt8(value))
        }
        return characters
    }

    private static func isPrintableLatin1(_ c: UInt8) -> Bool {
        (0x20...0x7E).contains(c) || c >= 0xA0 || (8...13).contains(c) || c == 27
    }

    /// `io_lib:write_string(Chars, $")` for printable characters.
    private static func quotedString(_ characters: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for c in characters {
            switch c {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 10: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 13: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 9: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 11: out += [UInt8(ascii: "\\"), UInt8(ascii: "v")]
            case 8: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 12: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 27: out += [UInt8(ascii: "\\"), UInt8(ascii: "e")]
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }

    private static func write(_ item: Item) -> [UInt8] {
        switch item.kind {
        case .atomic(let text):
            return text
        case .bin(let pieces):
            return Array("<<".utf8) + Array(pieces.joined(separator: [UInt8(ascii: ",")])) + Array(">>".utf8)
        case .list(let items):
            return [UInt8(ascii: "[")] + Array(items.map(write).joined(separator: [UInt8(ascii: ",")])) + [UInt8(ascii: "]")]
        case .tuple(let items):
            return [UInt8(ascii: "{")] + Array(items.map(write).joined(separator: [UInt8(ascii: ",")])) + [UInt8(ascii: "}")]
        }
    }

    private static func spaces(_ count: Int) -> [UInt8] { Array(repeating: UInt8(ascii: " "), count: max(count, 0)) }

    // io_lib_pretty:pp/8 and friends, for lists, untagged tuples and binaries
    // (EJSON has no tagged tuples, records or maps). `col` is the current column,
    // `ll` the line length, `m` the one-line length of the whole term, `ind` the
    // indentation of continuation lines, `ld` the closing brackets that follow
    // ("last depth") and `w` the width already used on the line.

    private static func pp(_ item: Item, col: Int, ll: Int, m: Int, ind: [UInt8], ld: Int, w: Int) -> [UInt8] {
        if item.length < ll - col - ld && item.length + w + ld <= m { return write(item) }
        switch item.kind {
        case .list(let items):
            return [UInt8(ascii: "[")]
                + ppList(items, col: col + 1, ll: ll, m: m, ind: spaces(1) + ind, ld: ld, w: w + 1)
                + [UInt8(ascii: "]")]
        case .tuple(let items):
            return [UInt8(ascii: "{")]
                + ppList(items, col: col + 1, ll: ll, m: m, ind: spaces(1) + ind, ld: ld, w: w + 1)
                + [UInt8(ascii: "}")]
        case .bin(let pieces):
            return ppBinary(pieces, col: col + 2, ll: ll, m: m, ind: spaces(2) + ind, ld: ld, w: w)
        case .atomic(let text):
            return text
        }
    }

    private static func ppList(_ items: [Item], col: Int, ll: Int, m: Int, ind: [UInt8], ld: Int, w: Int) -> [UInt8] {
        let col0 = col
        let firstLastDepth = items.count > 1 ? 0 : ld + 1
        let (firstText, firstWidth) = ppElement(items[0], col: col0, ll: ll, m: m, ind: ind, ld: firstLastDepth, w: w)
        var out = firstText
        var col = col0 + firstWidth
        var w = w + firstWidth
        for index in items.indices.dropFirst() {
            let item = items[index]
            let ld1 = index == items.count - 1 ? ld + 1 : 0
            let elementLength = 1 + item.length
            let fits = ld1 == 0
                ? elementLength + 1 < ll - col && w + elementLength + 1 <= m
                : elementLength < ll - col - ld1 && w + elementLength + ld1 <= m
            if fits && item.isAtomic {
                out.append(UInt8(ascii: ","))
                out += write(item)
                col += elementLength
                w += elementLength
            } else {
                let (text, width) = ppElement(item, col: col0, ll: ll, m: m, ind: ind, ld: ld1, w: 0)
                out += [UInt8(ascii: ","), UInt8(ascii: "\n")]
                out += ind
                out += text
                col = col0 + width
                w = width
            }
        }
        return out
    }

    private static func ppElement(_ item: Item, col: Int, ll: Int, m: Int, ind: [UInt8], ld: Int, w: Int) -> ([UInt8], Int) {
        if item.length < ll - col - ld && item.length + w + ld <= m && item.isAtomic {
            return (write(item), item.length)
        }
        return (pp(item, col: col, ll: ll, m: m, ind: ind, ld: ld, w: w), ll)  // forces a new line
    }

    private static func ppBinary(_ pieces: [[UInt8]], col: Int, ll: Int, m: Int, ind: [UInt8], ld: Int, w: Int) -> [UInt8] {
        let n0 = max(8, min(ll - col, m - 4 - w) - ld)
        var n = n0
        var out: [UInt8] = Array("<<".utf8)
        for (index, piece) in pieces.enumerated() {
            if index < pieces.count - 1 {
                let length = piece.count + 1
                if n - length < 0 {
                    out.append(UInt8(ascii: "\n"))
                    out += ind
                    n = n0 - length
                } else {
                    n -= length
                }
                out += piece
                out.append(UInt8(ascii: ","))
            } else {
                if piece.count > n {
                    out.append(UInt8(ascii: "\n"))
                    out += ind
                }
                out += piece
            }
        }
        out += Array(">>".utf8)
        return out
    }
}
