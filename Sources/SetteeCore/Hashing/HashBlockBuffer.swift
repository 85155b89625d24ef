/// The 64-byte block buffering and Merkle–Damgård padding shared by `MD5` and
/// `SHA256`, so that input may arrive in chunks of any size.
///
/// Compression functions are passed in with the state they update, rather than
/// captured, so that a hasher can hand over its buffer and its state as two
/// separate stored properties without overlapping accesses to itself.
package struct HashBlockBuffer: Sendable {
    private var block: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var blockCount = 0
    private var totalLength: UInt64 = 0

    /// Feeds `bytes` through `compress`, which takes whole 64-byte blocks
    /// (a pointer and a block count); keeps any incomplete block for later.
    @inline(__always)
    package mutating func absorb<State>(
        _ bytes: UnsafeRawBufferPointer,
        into state: inout State,
        _ compress: (inout State, UnsafeRawPointer, Int) -> Void
    ) {
        guard var source = bytes.baseAddress, bytes.count > 0 else { return }
        var remaining = bytes.count
        totalLength &+= UInt64(remaining)
        if blockCount > 0 {
            let taken = min(64 - blockCount, remaining)
            let offset = blockCount
            withUnsafeMutableBytes(of: &block) { $0.baseAddress!.advanced(by: offset).copyMemory(from: source, byteCount: taken) }
            blockCount += taken
            source += taken
            remaining -= taken
            guard blockCount == 64 else { return }
            withUnsafeBytes(of: block) { compress(&state, $0.baseAddress!, 1) }
            blockCount = 0
        }
        // Whole blocks are compressed straight from the caller's memory.
        let wholeBlocks = remaining / 64
        if wholeBlocks > 0 {
            compress(&state, source, wholeBlocks)
            source += wholeBlocks * 64
            remaining -= wholeBlocks * 64
        }
        if remaining > 0 {
            withUnsafeMutableBytes(of: &block) { $0.baseAddress!.copyMemory(from: source, byteCount: remaining) }
            blockCount = remaining
        }
    }

    /// Compresses the final padded block(s): the kept bytes, `0x80`, zeros, and the
    /// message length in bits as a 64-bit integer (little-endian for MD5,
    /// big-endian for SHA-256).
    package func finish<State>(
        into state: inout State,
        lengthIsBigEndian: Bool,
        _ compress: (inout State, UnsafeRawPointer, Int) -> Void
    ) {
        let bitLength = totalLength &* 8
        let paddedCount = blockCount < 56 ? 64 : 128
        let kept = blockCount
        withUnsafeTemporaryAllocation(byteCount: 128, alignment: 8) { padded in
            padded.initializeMemory(as: UInt8.self, repeating: 0)
            withUnsafeBytes(of: block) { padded.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: kept) }
            padded[kept] = 0x80
            padded.storeBytes(
                of: lengthIsBigEndian ? bitLength.bigEndian : bitLength.littleEndian,
                toByteOffset: paddedCount - 8,
                as: UInt64.self
            )
            compress(&state, UnsafeRawPointer(padded.baseAddress!), paddedCount / 64)
        }
    }
}
