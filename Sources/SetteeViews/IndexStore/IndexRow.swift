import Foundation
import SetteeCore
package import SetteeStorage

/// How a view row is stored, and its document's entry in the back index.
///
/// Key: the row's *full key* — `collation(key) ‖ stuffed(doc id) ‖ 0x00 ‖ u32 emit
/// index` — whose byte order is the view's order (ties by doc id, then by emit
/// index, so a doc emitting the same key twice keeps two rows; the emit indexes
/// of such rows go by value, as CouchDB orders them: see
/// ``MappedBatch/orderEqualKeysByValue(fromRow:scratch:)``). LMDB keys stop at
/// 511 bytes: a full key of 480 bytes or more is stored as its first 480 bytes
/// followed by a hash of the whole, and the whole goes into the value. Rows whose
/// stored keys share those 480 bytes are few and adjacent; readers sort them by
/// full key (``IndexScanner``), so long keys still sort and match exactly.
///
/// Value: `varint key-JSON length ‖ varint (encoded-key length × 2 + long) ‖
/// [varint full-key length, when long] ‖ key JSON ‖ [full key, when long] ‖
/// value JSON`. The document's id is not repeated: it is read back from the
/// full key, between the encoded key and the emit index.
///
/// Back index (doc id → its rows in one index), per row in emit order:
/// `varint encoded-key length ‖ encoded key ‖ varint emit index` — with the id,
/// all a stored key is made of (``forEachStoredKey(inBackEntry:id:scratch:_:)``).
package struct IndexRow {
    package static let prefixLength = 480
    /// The layout of values and back-index entries, part of every view's
    /// signature: indexes of another layout are rebuilt, never misread.
    /// (3: one document's rows under the same key ordered by value.)
    package static let format = 3

    /// The stored LMDB key and value.
    package let storedKey: UnsafeRawBufferPointer
    package let value: UnsafeRawBufferPointer
    private let encodedKeyLength: Int
    private let keyJSONRange: Range<Int>
    /// Where the full key lies in the value; empty when the stored key is the full key.
    private let fullKeyRange: Range<Int>

    /// A stored row, its layout checked before anything is read from it: a
    /// value whose lengths run past its end, or a key too short for the id
    /// and emit index it must end with, is not one Settee wrote (a page
    /// overwritten) and is reported as damage instead of being read past.
    package init(storedKey: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(StorageError) {
        self.storedKey = storedKey
        self.value = value
        var offset = 0
        let keyJSONLength = Self.readVarint(value, at: &offset)
        let lengthAndFlag = Self.readVarint(value, at: &offset)
        encodedKeyLength = lengthAndFlag >> 1
        let fullKeyLength = lengthAndFlag & 1 == 1 ? Self.readVarint(value, at: &offset) : 0
        // Compared by subtraction: lengths read from damaged bytes may be huge.
        guard keyJSONLength >= 0, keyJSONLength <= value.count - offset,
              fullKeyLength >= 0, fullKeyLength <= value.count - offset - keyJSONLength else {
            throw Self.damage("its value is shorter than the lengths it records")
        }
        keyJSONRange = offset..<offset + keyJSONLength
        fullKeyRange = keyJSONRange.upperBound..<keyJSONRange.upperBound + fullKeyLength
        // The full key ends with the document id, a 0x00 and a 4-byte emit index.
        let fullKeyCount = fullKeyLength > 0 ? fullKeyLength : storedKey.count
        guard encodedKeyLength >= 0, fullKeyCount >= 5, encodedKeyLength <= fullKeyCount - 5 else {
            throw Self.damage("its key is too short for its encoded key, document id and emit index")
        }
    }

    private static func damage(_ problem: String) -> StorageError {
        StorageError.damaged("reading a row of a view index",
                     explanation: "the database is damaged: a view index row does not decode (\(problem))")
    }

    /// The full key (see above): what rows are ordered by.
    package var fullKey: UnsafeRawBufferPointer {
        fullKeyRange.isEmpty ? storedKey : UnsafeRawBufferPointer(rebasing: value[fullKeyRange])
    }

    /// The collation encoding of the emitted key alone.
    package var encodedKey: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: fullKey[0..<encodedKeyLength])
    }

    /// The order among the document's rows of this view, as emitted.
    package var emitIndex: UInt32 {
        let key = fullKey
        return UInt32(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 4, as: UInt32.self))
    }

    /// Calls `body` with the emitting document's id (UTF-8), read from the
    /// full key: in place, unless the id holds bytes 0x00 or 0x01 (stuffed).
    package func withID<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let key = fullKey
        let stuffed = UnsafeRawBufferPointer(rebasing: key[encodedKeyLength..<key.count - 5])
        guard let base = stuffed.baseAddress, memchr(base, 0x01, stuffed.count) != nil else { return try body(stuffed) }
        var id: [UInt8] = []
        id.reserveCapacity(stuffed.count)
        var index = 0
        while index < stuffed.count {
            if stuffed[index] == 0x01, index + 1 < stuffed.count {
                id.append(stuffed[index + 1] &- 1)
                index += 2
            } else {
                id.append(stuffed[index])
                index += 1
            }
        }
        return try id.withUnsafeBytes(body)
    }

    /// The emitting document's id.
    package var id: String {
        withID { String(decoding: $0, as: UTF8.self) }
    }

    /// The emitted key as JSON text.
    package var keyJSON: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: value[keyJSONRange])
    }

    /// The emitted value as JSON text.
    package var valueJSON: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: value[fullKeyRange.upperBound...])
    }

    /// Whether this row may share its first 480 stored bytes with others whose order
    /// only the full keys decide.
    package var isInPrefixGroup: Bool { storedKey.count >= Self.prefixLength }

    // MARK: Building rows

    /// Appends `stuffed(id) ‖ 0x00 ‖ u32 index` to an encoded key, making the full key.
    package static func appendFullKeySuffix(id: UnsafeRawBufferPointer, emitIndex: UInt32, to out: inout [UInt8]) {
        CollationKey.appendStuffed(id, to: &out)
        out.append(0)
        withUnsafeBytes(of: emitIndex.bigEndian) { out.append(contentsOf: $0) }
    }

    /// Appends the stored key for a full key to `out`.
    package static func appendStoredKey(forFullKey fullKey: [UInt8], to out: inout [UInt8]) {
        guard fullKey.count >= prefixLength else {
            out.append(contentsOf: fullKey)
            return
        }
        out.append(contentsOf: fullKey[0..<prefixLength])
        fullKey.withUnsafeBytes { out.append(contentsOf: SHA256.hash($0).prefix(16)) }
    }

    /// Appends the stored value to `out`.
    package static func appendValue(fullKey: [UInt8], encodedKeyLength: Int, keyJSON: UnsafeRawBufferPointer,
                            valueJSON: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let long = fullKey.count >= prefixLength
        appendVarint(keyJSON.count, to: &out)
        appendVarint(encodedKeyLength << 1 | (long ? 1 : 0), to: &out)
        if long { appendVarint(fullKey.count, to: &out) }
        out.append(contentsOf: keyJSON)
        if long { out.append(contentsOf: fullKey) }
        out.append(contentsOf: valueJSON)
    }

    // MARK: Back index

    /// Appends this row's part of its document's back-index entry to `out`.
    package func appendBackEntry(to out: inout [UInt8]) {
        Self.appendVarint(encodedKeyLength, to: &out)
        out.append(contentsOf: encodedKey)
        Self.appendVarint(Int(emitIndex), to: &out)
    }

    /// Calls `body` with the stored key of each row a back-index entry lists,
    /// made again from `id` in `scratch`.
    package static func forEachStoredKey(inBackEntry entry: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer, scratch: inout [UInt8],
                                 _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var fullKey: [UInt8] = []
        var offset = 0
        while offset < entry.count {
            let length = readVarint(entry, at: &offset)
            guard offset + length <= entry.count else { throw StorageError.damaged("reading a view's back index") }
            fullKey.removeAll(keepingCapacity: true)
            fullKey.append(contentsOf: UnsafeRawBufferPointer(rebasing: entry[offset..<offset + length]))
            offset += length
            appendFullKeySuffix(id: id, emitIndex: UInt32(readVarint(entry, at: &offset)), to: &fullKey)
            scratch.removeAll(keepingCapacity: true)
            appendStoredKey(forFullKey: fullKey, to: &scratch)
            try scratch.withUnsafeBytes(body)
        }
    }

    // MARK: Varints

    /// LEB128: seven bits a byte, low first.
    package static func appendVarint(_ value: Int, to out: inout [UInt8]) {
        var rest = UInt(value)
        while rest >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    /// Reads a varint at `offset`, moving past it (0 past the end).
    package static func readVarint(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> Int {
        var result = 0
        var shift = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            result |= Int(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        return result
    }
}

extension Reducer {
    /// Adds an index row: its id is read from the full key only when the
    /// reduce function may use it.
    package func add(row: IndexRow, to accumulator: inout Accumulator) throws {
        guard readsIDs else {
            return try add(key: row.keyJSON, id: UnsafeRawBufferPointer(start: nil, count: 0), value: row.valueJSON, to: &accumulator)
        }
        try row.withID { try add(key: row.keyJSON, id: $0, value: row.valueJSON, to: &accumulator) }
    }
}

/// A bound of a scan over full keys.
package struct IndexBound {
    package var bytes: [UInt8]
    package var inclusive: Bool
}

/// A range of full keys; nil bounds are open.
package struct IndexRange {
    package var lower: IndexBound?
    package var upper: IndexBound?

    package static let all = IndexRange(lower: nil, upper: nil)

    /// Every key below `bound`: the rows before a range that starts there.
    package static func below(_ bound: IndexBound) -> IndexRange {
        IndexRange(lower: nil, upper: IndexBound(bytes: bound.bytes, inclusive: !bound.inclusive))
    }

    /// The rows from the encoded key `start` to the encoded key `end` (nil:
    /// open), each with its document id bound, as a view query's `startkey`,
    /// `startkey_docid`, `endkey`, `endkey_docid` and `inclusive_end` bound
    /// them (`couch_mrview_util:key_opts/2`). `start` is where a read begins:
    /// descending, the upper end.
    package static func keys(from start: [UInt8]?, docID startDocID: String? = nil, to end: [UInt8]?, docID endDocID: String? = nil,
                             descending: Bool, inclusiveEnd: Bool = true) -> IndexRange {
        let start = start.map { KeyBound($0, docID: startDocID) }
        let end = end.map { KeyBound($0, docID: endDocID) }
        if descending {
            let upper = start.map { IndexBound(bytes: $0.afterAll, inclusive: true) }
            let lower = end.map { inclusiveEnd ? IndexBound(bytes: $0.first, inclusive: true) : IndexBound(bytes: $0.afterAll, inclusive: false) }
            return IndexRange(lower: lower, upper: upper)
        }
        let lower = start.map { IndexBound(bytes: $0.first, inclusive: true) }
        let upper = end.map { inclusiveEnd ? IndexBound(bytes: $0.afterAll, inclusive: true) : IndexBound(bytes: $0.first, inclusive: false) }
        return IndexRange(lower: lower, upper: upper)
    }

    /// Full keys from the first row of a key (and doc id) to past its last.
    private struct KeyBound {
        var first: [UInt8]
        var afterAll: [UInt8]

        init(_ encodedKey: [UInt8], docID: String?) {
            guard let docID else {
                // Doc ids are UTF-8, which never holds 0xFF: past every row of this key.
                first = encodedKey
                afterAll = encodedKey + [0xFF]
                return
            }
            var first = encodedKey
            var id = docID
            id.withUTF8 { CollationKey.appendStuffed(UnsafeRawBufferPointer($0), to: &first) }
            first.append(0)
            self.first = first
            afterAll = first + [0xFF]
        }
    }

    package func isAboveLower(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let lower else { return true }
        let order = compareBytes(key, lower.bytes)
        return order > 0 || (order == 0 && lower.inclusive)
    }

    package func isBelowUpper(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let upper else { return true }
        let order = compareBytes(key, upper.bytes)
        return order < 0 || (order == 0 && upper.inclusive)
    }
}
