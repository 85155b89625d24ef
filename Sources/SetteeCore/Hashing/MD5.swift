/// MD5 (RFC 1321), incremental.
///
/// Not for security: CouchDB uses it for revision ids and attachment digests, so
/// Settee must produce the same values.
package struct MD5: BlockHash {
    package typealias State = (UInt32, UInt32, UInt32, UInt32)

    private var state: State = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    private var buffer = HashBlockBuffer()

    /// The length of a digest in bytes.
    package static let digestCount = 16

    /// A hasher with nothing added yet.
    package init() {}

    /// Adds `bytes` to the message.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        buffer.absorb(bytes, into: &state, Self.compress)
    }

    /// The 16-byte digest of everything added so far. The hasher is left as it was,
    /// so more may still be added.
    package func finalize() -> [UInt8] {
        var state = state
        buffer.finish(into: &state, lengthIsBigEndian: false, Self.compress)
        return withUnsafeBytes(of: (state.0.littleEndian, state.1.littleEndian, state.2.littleEndian, state.3.littleEndian)) {
            Array($0)
        }
    }

    // MARK: Compression

    /// Runs `blockCount` 64-byte blocks at `blocks` through the RFC 1321 rounds,
    /// unrolled so every shift and constant is a literal.
    private static func compress(_ state: inout State, _ blocks: UnsafeRawPointer, _ blockCount: Int) {
        var (a0, b0, c0, d0) = state
        var block = blocks
        for _ in 0..<blockCount {
            @inline(__always) func word(_ index: Int) -> UInt32 {
                UInt32(littleEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
            }
            let x0 = word(0), x1 = word(1), x2 = word(2), x3 = word(3)
            let x4 = word(4), x5 = word(5), x6 = word(6), x7 = word(7)
            let x8 = word(8), x9 = word(9), x10 = word(10), x11 = word(11)
            let x12 = word(12), x13 = word(13), x14 = word(14), x15 = word(15)
            var a = a0, b = b0, c = c0, d = d0
            a = Self.f(a, b, c, d, x0, 7, 0xd76aa478)
            d = Self.f(d, a, b, c, x1, 12, 0xe8c7b756)
            c = Self.f(c, d, a, b, x2, 17, 0x242070db)
            b = Self.f(b, c, d, a, x3, 22, 0xc1bdceee)
            a = Self.f(a, b, c, d, x4, 7, 0xf57c0faf)
            d = Self.f(d, a, b, c, x5, 12, 0x4787c62a)
            c = Self.f(c, d, a, b, x6, 17, 0xa8304613)
            b = Self.f(b, c, d, a, x7, 22, 0xfd469501)
            a = Self.f(a, b, c, d, x8, 7, 0x698098d8)
            d = Self.f(d, a, b, c, x9, 12, 0x8b44f7af)
            c = Self.f(c, d, a, b, x10, 17, 0xffff5bb1)
            b = Self.f(b, c, d, a, x11, 22, 0x895cd7be)
            a = Self.f(a, b, c, d, x12, 7, 0x6b901122)
            d = Self.f(d, a, b, c, x13, 12, 0xfd987193)
            c = Self.f(c, d, a, b, x14, 17, 0xa679438e)
            b = Self.f(b, c, d, a, x15, 22, 0x49b40821)
            a = Self.g(a, b, c, d, x1, 5, 0xf61e2562)
            d = Self.g(d, a, b, c, x6, 9, 0xc040b340)
            c = Self.g(c, d, a, b, x11, 14, 0x265e5a51)
            b = Self.g(b, c, d, a, x0, 20, 0xe9b6c7aa)
            a = Self.g(a, b, c, d, x5, 5, 0xd62f105d)
            d = Self.g(d, a, b, c, x10, 9, 0x02441453)
            c = Self.g(c, d, a, b, x15, 14, 0xd8a1e681)
            b = Self.g(b, c, d, a, x4, 20, 0xe7d3fbc8)
            a = Self.g(a, b, c, d, x9, 5, 0x21e1cde6)
            d = Self.g(d, a, b, c, x14, 9, 0xc33707d6)
            c = Self.g(c, d, a, b, x3, 14, 0xf4d50d87)
            b = Self.g(b, c, d, a, x8, 20, 0x455a14ed)
            a = Self.g(a, b, c, d, x13, 5, 0xa9e3e905)
            d = Self.g(d, a, b, c, x2, 9, 0xfcefa3f8)
            c = Self.g(c, d, a, b, x7, 14, 0x676f02d9)
            b = Self.g(b, c, d, a, x12, 20, 0x8d2a4c8a)
            a = Self.h(a, b, c, d, x5, 4, 0xfffa3942)
            d = Self.h(d, a, b, c, x8, 11, 0x8771f681)
            c = Self.h(c, d, a, b, x11, 16, 0x6d9d6122)
            b = Self.h(b, c, d, a, x14, 23, 0xfde5380c)
            a = Self.h(a, b, c, d, x1, 4, 0xa4beea44)
            d = Self.h(d, a, b, c, x4, 11, 0x4bdecfa9)
            c = Self.h(c, d, a, b, x7, 16, 0xf6bb4b60)
            b = Self.h(b, c, d, a, x10, 23, 0xbebfbc70)
            a = Self.h(a, b, c, d, x13, 4, 0x289b7ec6)
            d = Self.h(d, a, b, c, x0, 11, 0xeaa127fa)
            c = Self.h(c, d, a, b, x3, 16, 0xd4ef3085)
            b = Self.h(b, c, d, a, x6, 23, 0x04881d05)
            a = Self.h(a, b, c, d, x9, 4, 0xd9d4d039)
            d = Self.h(d, a, b, c, x12, 11, 0xe6db99e5)
            c = Self.h(c, d, a, b, x15, 16, 0x1fa27cf8)
            b = Self.h(b, c, d, a, x2, 23, 0xc4ac5665)
            a = Self.i(a, b, c, d, x0, 6, 0xf4292244)
            d = Self.i(d, a, b, c, x7, 10, 0x432aff97)
            c = Self.i(c, d, a, b, x14, 15, 0xab9423a7)
            b = Self.i(b, c, d, a, x5, 21, 0xfc93a039)
            a = Self.i(a, b, c, d, x12, 6, 0x655b59c3)
            d = Self.i(d, a, b, c, x3, 10, 0x8f0ccc92)
            c = Self.i(c, d, a, b, x10, 15, 0xffeff47d)
            b = Self.i(b, c, d, a, x1, 21, 0x85845dd1)
            a = Self.i(a, b, c, d, x8, 6, 0x6fa87e4f)
            d = Self.i(d, a, b, c, x15, 10, 0xfe2ce6e0)
            c = Self.i(c, d, a, b, x6, 15, 0xa3014314)
            b = Self.i(b, c, d, a, x13, 21, 0x4e0811a1)
            a = Self.i(a, b, c, d, x4, 6, 0xf7537e82)
            d = Self.i(d, a, b, c, x11, 10, 0xbd3af235)
            c = Self.i(c, d, a, b, x2, 15, 0x2ad7d2bb)
            b = Self.i(b, c, d, a, x9, 21, 0xeb86d391)
            a0 &+= a
            b0 &+= b
            c0 &+= c
            d0 &+= d
            block += 64
        }
        state = (a0, b0, c0, d0)
    }

    @inline(__always)
    private static func rotateLeft(_ value: UInt32, _ count: UInt32) -> UInt32 {
        value &<< count | value &>> (32 &- count)
    }

    @inline(__always)
    private static func f(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32) -> UInt32 {
        b &+ rotateLeft(a &+ (d ^ (b & (c ^ d))) &+ x &+ t, s)
    }

    @inline(__always)
    private static func g(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32) -> UInt32 {
        b &+ rotateLeft(a &+ (c ^ (d & (b ^ c))) &+ x &+ t, s)
    }

    @inline(__always)
    private static func h(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32) -> UInt32 {
        b &+ rotateLeft(a &+ (b ^ c ^ d) &+ x &+ t, s)
    }

    @inline(__always)
    private static func i(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32) -> UInt32 {
        b &+ rotateLeft(a &+ (c ^ (b | ~d)) &+ x &+ t, s)
    }
}
