import Foundation
/// How a view row is stored.
///
/// Key: the row's *full key* — `collation(key) ‖ stuffed(doc id) ‖ 0x00 ‖ u32 emit
/// index` — whose byte order is the view's order (ties by doc id, then by emit
/// order, so a doc emitting the same key twice keeps two rows). LMDB keys stop at
/// 511 bytes: a full key of 480 bytes or more is stored as its first 480 bytes
/// followed by a hash of the whole, and the whole goes into the value. Rows whose
/// stored keys share those 480 bytes are few and adjacent; readers sort them by
/// full key (``IndexScanner``), so long keys still sort and match exactly.
///
/// Value: `u8 flags ‖ u32 encoded-key length ‖ u16 id length ‖ u32 key-JSON
/// length ‖ u32 full-key length (0 when the stored key is the full key) ‖ id ‖
/// key JSON ‖ full key ‖ value JSON`.
struct IndexRow {
    static let prefixLength = 480
    static let headerSize = 15

    /// The stored LMDB key and value.
    let storedKey: UnsafeRawBufferPointer
    let value: UnsafeRawBufferPointer

    private var encodedKeyLength: Int { Int(value.loadUnaligned(fromByteOffset: 1, as: UInt32.self)) }
    private var idLength: Int { Int(value.loadUnaligned(fromByteOffset: 5, as: UInt16.self)) }
    private var keyJSONLength: Int { Int(value.loadUnaligned(fromByteOffset: 7, as: UInt32.self)) }
    private var fullKeyLength: Int { Int(value.loadUnaligned(fromByteOffset: 11, as: UInt32.self)) }

    /// The full key (see above): what rows are ordered by.
    var fullKey: UnsafeRawBufferPointer {
        let length = fullKeyLength
        if length == 0 { return storedKey }
        let start = Self.headerSize + idLength + keyJSONLength
        return UnsafeRawBufferPointer(rebasing: value[start..<start + length])
    }

    /// The collation encoding of the emitted key alone.
    var encodedKey: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: fullKey[0..<encodedKeyLength])
    }

    /// The emitting document's id (UTF-8).
    var id: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: value[Self.headerSize..<Self.headerSize + idLength])
    }

    /// The emitted key as JSON text.
    var keyJSON: UnsafeRawBufferPointer {
        let start = Self.headerSize + idLength
        return UnsafeRawBufferPointer(rebasing: value[start..<start + keyJSONLength])
    }

    /// The emitted value as JSON text.
    var valueJSON: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: value[(Self.headerSize + idLength + keyJSONLength + fullKeyLength)...])
    }

    /// Whether this row may share its first 480 stored bytes with others whose order
    /// only the full keys decide.
    var isInPrefixGroup: Bool { storedKey.count >= Self.prefixLength }

    // MARK: Building rows

    /// Appends `stuffed(id) ‖ 0x00 ‖ u32 index` to an encoded key, making the full key.
    static func appendFullKeySuffix(id: UnsafeRawBufferPointer, emitIndex: UInt32, to out: inout [UInt8]) {
        CollationKey.appendStuffed(id, to: &out)
        out.append(0)
        withUnsafeBytes(of: emitIndex.bigEndian) { out.append(contentsOf: $0) }
    }

    /// Appends the stored key for a full key to `out`.
    static func appendStoredKey(forFullKey fullKey: [UInt8], to out: inout [UInt8]) {
        guard fullKey.count >= prefixLength else {
            out.append(contentsOf: fullKey)
            return
        }
        out.append(contentsOf: fullKey[0..<prefixLength])
        fullKey.withUnsafeBytes { out.append(contentsOf: SHA256.hash($0).prefix(16)) }
    }

    /// Appends the stored value to `out`.
    static func appendValue(fullKey: [UInt8], encodedKeyLength: Int, id: UnsafeRawBufferPointer,
                            keyJSON: UnsafeRawBufferPointer, valueJSON: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let long = fullKey.count >= prefixLength
        withUnsafeTemporaryAllocation(byteCount: headerSize, alignment: 1) { header in
            header.storeBytes(of: 0, toByteOffset: 0, as: UInt8.self)
            header.storeBytes(of: UInt32(encodedKeyLength), toByteOffset: 1, as: UInt32.self)
            header.storeBytes(of: UInt16(id.count), toByteOffset: 5, as: UInt16.self)
            header.storeBytes(of: UInt32(keyJSON.count), toByteOffset: 7, as: UInt32.self)
            header.storeBytes(of: UInt32(long ? fullKey.count : 0), toByteOffset: 11, as: UInt32.self)
            out.append(contentsOf: UnsafeRawBufferPointer(header))
        }
        out.append(contentsOf: id)
        out.append(contentsOf: keyJSON)
        if long { out.append(contentsOf: fullKey) }
        out.append(contentsOf: valueJSON)
    }
}

/// A bound of a scan over full keys.
struct IndexBound {
    var bytes: [UInt8]
    var inclusive: Bool
}

/// A range of full keys; nil bounds are open.
struct IndexRange {
    var lower: IndexBound?
    var upper: IndexBound?

    static let all = IndexRange(lower: nil, upper: nil)

    func isAboveLower(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let lower else { return true }
        let order = compareBytes(key, lower.bytes)
        return order > 0 || (order == 0 && lower.inclusive)
    }

    func isBelowUpper(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let upper else { return true }
        let order = compareBytes(key, upper.bytes)
        return order < 0 || (order == 0 && upper.inclusive)
    }
}

/// memcmp order, shorter first on a common prefix.
func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let common = min(a.count, b.count)
    if common > 0 {
        let order = memcmp(a.baseAddress!, b.baseAddress!, common)
        if order != 0 { return order < 0 ? -1 : 1 }
    }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

func compareBytes(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
    b.withUnsafeBytes { compareBytes(a, $0) }
}
