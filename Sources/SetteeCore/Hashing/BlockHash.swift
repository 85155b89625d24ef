/// What MD5 and SHA-256 have in common: incremental hashing of bytes, and the
/// conveniences built on it.
package protocol BlockHash: Sendable {
    /// The length of a digest in bytes.
    static var digestCount: Int { get }
    /// A hasher with nothing added yet.
    init()
    /// Adds `bytes` to the message.
    mutating func update(_ bytes: UnsafeRawBufferPointer)
    /// The digest of everything added so far; more may still be added.
    func finalize() -> [UInt8]
}

extension BlockHash {
    /// Adds `bytes` to the message.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        if bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) != nil { return }
        // Not contiguous: hash through a small reused chunk rather than byte by byte.
        var chunk: [UInt8] = []
        chunk.reserveCapacity(256)
        for value in bytes {
            chunk.append(value)
            if chunk.count == 256 {
                chunk.withUnsafeBytes { update($0) }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        chunk.withUnsafeBytes { update($0) }
    }

    /// Adds the UTF-8 of `text` to the message.
    package mutating func update(_ text: String) {
        var text = text
        text.withUTF8 { update(UnsafeRawBufferPointer($0)) }
    }

    /// The digest of `bytes`.
    package static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var hasher = Self()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of `bytes`.
    package static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = Self()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of the UTF-8 of `text`.
    package static func hash(_ text: String) -> [UInt8] {
        var hasher = Self()
        hasher.update(text)
        return hasher.finalize()
    }

    /// The digest of `bytes` in lowercase hexadecimal.
    package static func hexDigest(_ bytes: UnsafeRawBufferPointer) -> String {
        hash(bytes).hexString
    }

    /// The digest of `bytes` in lowercase hexadecimal.
    package static func hexDigest(_ bytes: some Sequence<UInt8>) -> String {
        hash(bytes).hexString
    }

    /// The digest of the UTF-8 of `text` in lowercase hexadecimal.
    package static func hexDigest(_ text: String) -> String {
        hash(text).hexString
    }
}
