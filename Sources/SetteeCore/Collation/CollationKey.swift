import CSetteeCollation

/// How a view orders its keys: the view option `"collation"`.
public enum CollationMode: String, Sendable {
    /// CouchDB's default: `null < false < true < numbers < strings < arrays < objects`,
    /// strings by ICU's root collator (UCA, tertiary strength).
    case unicode
    /// `"collation": "raw"`: Erlang term order on the EJSON terms, which is
    /// `numbers < false < null < true < objects < arrays < strings`, strings by
    /// code point (UTF-8 bytes). See `test/elixir/test/view_collation_raw_test.exs`.
    case raw
}

/// View keys as bytes whose `memcmp` order is CouchDB's collation order.
///
/// ## Encoding
///
/// Every value starts with a type tag; the tags of a mode increase in that mode's
/// type order, and every tag is above `0x01`:
///
/// | value   | bytes after the tag                                                    |
/// |---------|------------------------------------------------------------------------|
/// | null, false, true | none                                                         |
/// | number  | 8 bytes, big-endian IEEE double with the sign bit flipped (positives) or all bits inverted (negatives); `-0` is written as `0` |
/// | string, unicode | ICU's root-collator sort key (it has no `0x00` bytes), then `0x00` |
/// | string, raw | the UTF-8 with `0x00` → `01 01` and `0x01` → `01 02`, then `0x00` |
/// | array   | the elements' encodings, then `0x00`                                   |
/// | object  | per member the key encoded as a string (with its tag) and the value, then `0x00` |
///
/// The `0x00` that closes a container is below every tag, so a prefix sorts
/// first; strings end in `0x00` below every byte their body can hold, so the
/// same holds for them. Each value is self-delimiting, which lets `prefix` cut
/// an array at an element boundary. Two encodings are equal exactly when the
/// values collate equal (`1` and `1.0`, `"a"` and `"a\u{200B}"`), but for
/// integers past 2^53 that round to the same `Double`: their encodings are
/// equal though ``compare(_:_:mode:)`` orders them exactly (``NumberOrder``),
/// so a reader that must tell them apart compares the values (`_find`
/// matches every row whose key bounds are such numbers).
///
/// The two modes use disjoint tags (unicode `0x10…0x16`, raw `0x20…0x26`), so
/// the structure of an encoding can be walked without knowing its mode; the
/// encodings of different modes are never meant to be compared with each other.
/// No encoding starts with `0xFF`: `[0xFF]` sorts above every key of either mode
/// (like CouchDB's `{<<255,255,255,255>>}` max-key sentinel).
///
/// Unicode-mode encodings contain ICU sort keys, which are only stable within
/// one ICU (UCA) version: an index built with another ICU major version must be
/// rebuilt.
package enum CollationKey {
    // MARK: Tags

    /// Closes arrays and objects; below every tag.
    package static let endMarker: UInt8 = 0x00
    /// A byte above the first byte of every encoding, of either mode.
    package static let maximumByte: UInt8 = 0xFF

    /// The tag bytes of one mode.
    package struct Tags {
        package var null: UInt8
        package var `false`: UInt8
        package var `true`: UInt8
        package var number: UInt8
        package var string: UInt8
        package var array: UInt8
        package var object: UInt8

        @inline(__always)
        package init(_ mode: CollationMode) {
            switch mode {
            case .unicode:
                // null < false < true < numbers < strings < arrays < objects
                null = 0x10; `false` = 0x11; `true` = 0x12; number = 0x13; string = 0x14; array = 0x15; object = 0x16
            case .raw:
                // Erlang term order: number < atom (false < null < true) < tuple ({Props}) < list < binary
                number = 0x20; `false` = 0x21; null = 0x22; `true` = 0x23; object = 0x24; array = 0x25; string = 0x26
            }
        }
    }

    /// What follows a tag byte, for walking an encoding without its mode.
    package enum TagKind {
        case end, literal, number, string, container, invalid
    }

    @inline(__always)
    package static func kind(ofTag tag: UInt8) -> TagKind {
        switch tag {
        case 0x00: return .end
        case 0x10, 0x11, 0x12, 0x21, 0x22, 0x23: return .literal
        case 0x13, 0x20: return .number
        case 0x14, 0x26: return .string
        case 0x15, 0x16, 0x24, 0x25: return .container
        default: return .invalid
        }
    }

    @inline(__always)
    package static func isArrayTag(_ tag: UInt8) -> Bool { tag == 0x15 || tag == 0x25 }

    // MARK: Encoding values

    /// The encoding of `value`.
    package static func encode(_ value: JSONValue, mode: CollationMode) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        append(value, mode: mode, to: &out)
        return out
    }

    /// The encoding of the array `array` (an encoded array) with one more
    /// element, `element` (encoded), at its end: what encoding the longer
    /// array gives, without encoding its elements again.
    package static func appending(element: [UInt8], toArray array: [UInt8]) -> [UInt8] {
        precondition(array.last == endMarker, "not an encoded array")
        var out = array
        out.removeLast()
        out.append(contentsOf: element)
        out.append(endMarker)
        return out
    }

    /// Appends the order-preserving encoding of `value` to `out`: `memcmp` order of
    /// two encodings is CouchDB's order of the values, and equal encodings mean
    /// collation-equal values. Iterative, so any nesting depth is fine.
    package static func append(_ value: JSONValue, mode: CollationMode, to out: inout [UInt8]) {
        let tags = Tags(mode)
        // Open containers with the index of their next element (or member).
        var stack: [EncodeFrame] = []
        var current = value
        while true {
            switch current {
            case .null:
                out.append(tags.null)
            case .bool(let flag):
                out.append(flag ? tags.true : tags.false)
            case .number(let number, _):
                appendNumber(number, tag: tags.number, to: &out)
            case .string(let string):
                appendString(string, mode: mode, tag: tags.string, to: &out)
            case .array(let elements):
                out.append(tags.array)
                stack.append(.array(elements, 0))
            case .object(let members):
                out.append(tags.object)
                stack.append(.object(members, 0))
            }
            // Find the next value to write, closing finished containers.
            nextValue: while true {
                guard let frame = stack.popLast() else { return }
                switch frame {
                case .array(let elements, let index):
                    if index < elements.count {
                        stack.append(.array(elements, index &+ 1))
                        current = elements[index]
                        break nextValue
                    }
                case .object(let members, let index):
                    if index < members.count {
                        stack.append(.object(members, index &+ 1))
                        appendString(members[index].key, mode: mode, tag: tags.string, to: &out)
                        current = members[index].value
                        break nextValue
                    }
                }
                out.append(endMarker)
            }
        }
    }

    private enum EncodeFrame {
        case array([JSONValue], Int)
        case object([(key: String, value: JSONValue)], Int)
    }

    // MARK: Scalars

    /// The tag and the eight order-preserving bytes of `number`.
    @inline(__always)
    package static func appendNumber(_ number: Double, tag: UInt8, to out: inout [UInt8]) {
        var bits: UInt64
        if number == 0 {
            bits = 0  // -0 collates equal to 0
        } else if number.isNaN {
            bits = Double.nan.bitPattern  // never from JSON; one NaN, above +infinity
        } else {
            bits = number.bitPattern
        }
        bits = bits & (1 << 63) == 0 ? bits | (1 << 63) : ~bits
        out.append(tag)
        withUnsafeBytes(of: bits.bigEndian) { out.append(contentsOf: $0) }
    }

    @inline(__always)
    package static func appendString(_ string: String, mode: CollationMode, tag: UInt8, to out: inout [UInt8]) {
        var string = string
        string.withUTF8 { utf8 in
            appendString(UnsafeRawBufferPointer(utf8), mode: mode, tag: tag, to: &out)
        }
    }

    /// The tag and body of the string whose (valid) UTF-8 is `utf8`.
    @inline(__always)
    package static func appendString(_ utf8: UnsafeRawBufferPointer, mode: CollationMode, tag: UInt8, to out: inout [UInt8]) {
        out.append(tag)
        switch mode {
        case .unicode: appendSortKey(utf8, to: &out)
        case .raw: appendStuffed(utf8, to: &out)
        }
        out.append(endMarker)
    }

    /// The sort keys of most strings fit here, on the stack.
    private static let stackSortKeyCapacity = 512

    /// Appends ICU's sort key for `utf8`, without a terminator.
    package static func appendSortKey(_ utf8: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        // An empty buffer may have no address; ICU reads nothing at length 0.
        let text = (utf8.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self)
        let length = utf8.count
        let needed: Int = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackSortKeyCapacity) { buffer in
            let written = Int(settee_collation_sort_key(text, length, buffer.baseAddress!, Int32(stackSortKeyCapacity)))
            guard written >= 0 else { icuFailure() }
            guard written < stackSortKeyCapacity else { return written }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<written]))
            return -1
        }
        guard needed >= 0 else { return }
        // Too long for the stack: ICU wants one byte beyond the key for its own terminator.
        let capacity = needed &+ 1
        let key = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            let written = Int(settee_collation_sort_key(text, length, buffer.baseAddress!, Int32(capacity)))
            guard written >= 0, written < capacity else { icuFailure() }
            count = written
        }
        out.append(contentsOf: key)
    }

    private static func icuFailure() -> Never {
        fatalError("ICU collation failed (settee_collation_initialize: \(settee_collation_initialize()))")
    }

    /// Appends `utf8` with `0x00` → `01 01` and `0x01` → `01 02`, so that `0x00`
    /// can end it and byte order is kept.
    @inline(__always)
    package static func appendStuffed(_ utf8: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var runStart = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            guard byte <= 0x01 else { continue }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[runStart..<index]))
            out.append(0x01)
            out.append(byte &+ 1)
            runStart = index &+ 1
        }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[runStart...]))
    }

    // MARK: Group level

    /// The encoding of the array encoded in `encoded` cut to its first `level`
    /// elements, exactly as `encode` would write that shorter array, for
    /// `group_level`. Keys that are not arrays, and arrays of at most `level`
    /// elements, come back unchanged.
    ///
    /// `level` 0 gives the encoding of `[]`. CouchDB's `group_level=0` instead
    /// reduces all rows into one row whose key is `null`; that is the caller's
    /// business, not this function's.
    package static func prefix(ofEncodedArray encoded: UnsafeRawBufferPointer, level: Int) -> [UInt8] {
        guard let end = elementsEnd(inEncodedArray: encoded, level: level) else { return Array(encoded) }
        var result: [UInt8] = []
        result.reserveCapacity(end &+ 1)
        result.append(contentsOf: UnsafeRawBufferPointer(rebasing: encoded[..<end]))
        result.append(endMarker)
        return result
    }

    /// `prefix(ofEncodedArray:level:)` for an array of bytes.
    package static func prefix(ofEncodedArray encoded: [UInt8], level: Int) -> [UInt8] {
        encoded.withUnsafeBytes { prefix(ofEncodedArray: $0, level: level) }
    }

    /// The offset just past the first `level` elements of the encoded array, or
    /// `nil` when `encoded` is not an array or has no more than `level` elements
    /// (so cutting changes nothing). The grouped key is `encoded[..<end] + [0x00]`;
    /// two keys fall in the same group when those bytes are equal, which can be
    /// checked without building the grouped keys.
    package static func elementsEnd(inEncodedArray encoded: UnsafeRawBufferPointer, level: Int) -> Int? {
        precondition(level >= 0, "group level must not be negative")
        guard encoded.count > 1, isArrayTag(encoded[0]) else { return nil }
        var position = 1
        for _ in 0..<level {
            guard position < encoded.count, encoded[position] != endMarker,
                  let next = endOfValue(in: encoded, at: position) else { return nil }
            position = next
        }
        guard position < encoded.count, encoded[position] != endMarker else { return nil }
        return position
    }

    /// The offset just past the encoded value starting at `start`, or `nil` if
    /// the encoding is malformed.
    package static func endOfValue(in encoded: UnsafeRawBufferPointer, at start: Int) -> Int? {
        var position = start
        var depth = 0
        repeat {
            guard position < encoded.count else { return nil }
            let tag = encoded[position]
            position &+= 1
            switch kind(ofTag: tag) {
            case .end:
                guard depth > 0 else { return nil }
                depth &-= 1
            case .literal:
                break
            case .number:
                position &+= 8
                guard position <= encoded.count else { return nil }
            case .string:
                while position < encoded.count, encoded[position] != endMarker { position &+= 1 }
                guard position < encoded.count else { return nil }
                position &+= 1
            case .container:
                depth &+= 1
            case .invalid:
                return nil
            }
        } while depth > 0
        return position
    }
}
