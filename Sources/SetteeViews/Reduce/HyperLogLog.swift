package import SetteeCore
import SetteeStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
package import Darwin
#endif

/// The HyperLogLog filter behind `_approx_count_distinct`: precision 11 (2048
/// registers, standard error 1.04/√2048 ≈ 2.3%), like CouchDB's `couch_hyper:new(11)`.
///
/// A key is hashed as its compact JSON text (`JSONWriter`) with xxHash64 (seed 0),
/// so keys that write the same JSON text count once. The hash's top 11 bits pick
/// the register; the register keeps the largest 1 + (leading zeros of the
/// remaining 53 bits), at most 54.
///
/// ## Partial form
/// `encoded` is a string, one of:
/// - `"hll11s:"` + base64 of 3 bytes per non-zero register, in increasing index
///   order, each the big-endian 24-bit word `index << 6 | value` (sparse; used
///   while fewer than 512 registers are set; `"hll11s:"` alone is the empty filter);
/// - `"hll11d:"` + base64 of all 2048 registers at 6 bits each, big-endian bit
///   order, 1536 bytes (dense).
/// Base64 is the standard alphabet; both payloads are multiples of 3 bytes, so
/// there is no padding. The form is canonical: equal registers, equal strings.
package struct HyperLogLog: Sendable, Equatable {
    package static let precision = 11
    package static let registerCount = 1 << precision
    package static let sparsePrefix = "hll11s:"
    package static let densePrefix = "hll11d:"

    /// One byte per register, each 0...54.
    package private(set) var registers: [UInt8]

    package init() {
        registers = Array(repeating: 0, count: Self.registerCount)
    }

    /// Adds a key.
    package mutating func insert(_ key: JSONValue) {
        var bytes: [UInt8] = []
        JSONWriter.write(key, into: &bytes)
        insert(hash: XXHash64.hash(bytes))
    }

    /// Adds an element by its 64-bit hash.
    package mutating func insert(hash: UInt64) {
        let index = Int(hash >> UInt64(64 - Self.precision))
        let rest = hash << UInt64(Self.precision)
        let value = UInt8(min(rest.leadingZeroBitCount, 64 - Self.precision) + 1)
        if value > registers[index] { registers[index] = value }
    }

    /// Register-wise maximum: the filter of the union of both inputs.
    package mutating func merge(_ other: HyperLogLog) {
        for index in registers.indices where other.registers[index] > registers[index] {
            registers[index] = other.registers[index]
        }
    }

    /// The estimated number of distinct elements, rounded to an integer: the
    /// standard HyperLogLog estimate α·m²/Σ2^(−M[j]), or linear counting
    /// m·ln(m/V) while that estimate is at most 2.5·m and V registers are still 0.
    /// (A 64-bit hash needs no large-range correction.)
    package var estimate: Double {
        let m = Double(Self.registerCount)
        var sum = 0.0
        var zeros = 0
        for value in registers {
            sum += Double(sign: .plus, exponent: -Int(value), significand: 1)
            if value == 0 { zeros += 1 }
        }
        let alpha = 0.7213 / (1 + 1.079 / m)
        let raw = alpha * m * m / sum
        if raw <= 2.5 * m && zeros > 0 {
            return (m * log(m / Double(zeros))).rounded(.toNearestOrAwayFromZero)
        }
        return raw.rounded(.toNearestOrAwayFromZero)
    }

    // MARK: Encoding

    package var encoded: String {
        let setCount = registers.reduce(0) { $0 + ($1 == 0 ? 0 : 1) }
        var bytes: [UInt8] = []
        if setCount * 3 < Self.registerCount * 6 / 8 {
            bytes.reserveCapacity(setCount * 3)
            for (index, value) in registers.enumerated() where value != 0 {
                let word = UInt32(index) << 6 | UInt32(value)
                bytes += [UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
            }
            return Self.sparsePrefix + Base64.encode(bytes)
        }
        bytes.reserveCapacity(Self.registerCount * 6 / 8)
        for start in stride(from: 0, to: Self.registerCount, by: 4) {
            let word = UInt32(registers[start]) << 18 | UInt32(registers[start + 1]) << 12
                | UInt32(registers[start + 2]) << 6 | UInt32(registers[start + 3])
            bytes += [UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
        }
        return Self.densePrefix + Base64.encode(bytes)
    }

    /// Decodes `encoded`; nil if `text` is not such a string.
    package init?(encoded text: String) {
        self.init()
        let utf8 = Array(text.utf8)
        if utf8.starts(with: Self.sparsePrefix.utf8) {
            guard let bytes = Base64.decode(utf8[Self.sparsePrefix.utf8.count...]), bytes.count % 3 == 0 else { return nil }
            for start in stride(from: 0, to: bytes.count, by: 3) {
                let word = UInt32(bytes[start]) << 16 | UInt32(bytes[start + 1]) << 8 | UInt32(bytes[start + 2])
                let index = Int(word >> 6)
                let value = UInt8(word & 0x3F)
                guard index < Self.registerCount, value <= 64 - Self.precision + 1 else { return nil }
                registers[index] = max(registers[index], value)
            }
        } else if utf8.starts(with: Self.densePrefix.utf8) {
            guard let bytes = Base64.decode(utf8[Self.densePrefix.utf8.count...]),
                  bytes.count == Self.registerCount * 6 / 8 else { return nil }
            for group in 0..<(Self.registerCount / 4) {
                let word = UInt32(bytes[group * 3]) << 16 | UInt32(bytes[group * 3 + 1]) << 8 | UInt32(bytes[group * 3 + 2])
                for offset in 0..<4 {
                    let value = UInt8((word >> UInt32(18 - 6 * offset)) & 0x3F)
                    guard value <= 64 - Self.precision + 1 else { return nil }
                    registers[group * 4 + offset] = value
                }
            }
        } else {
            return nil
        }
    }

    /// A stored `_approx_count_distinct` partial, or CouchDB's failure for one
    /// that is not a filter (CouchDB's `true = couch_hyper:is_hyper(…)` crashes).
    package static func decodePartial(_ partial: JSONValue) throws(BuiltinReduceFailure) -> HyperLogLog {
        guard case .string(let text) = partial, let filter = HyperLogLog(encoded: text) else {
            throw BuiltinReduceFailure(
                error: "badmatch",
                reason: "not an _approx_count_distinct partial: \(JSONWriter.string(partial).prefix(100))"
            )
        }
        return filter
    }
}

/// xxHash64 (Yann Collet's XXH64, seed 0 by default).
package enum XXHash64 {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    package static func hash(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { hash($0, seed: seed) }
    }

    package static func hash(_ input: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let length = input.count
        var offset = 0
        var h: UInt64
        @inline(__always) func read64(_ at: Int) -> UInt64 {
            UInt64(littleEndian: input.loadUnaligned(fromByteOffset: at, as: UInt64.self))
        }
        @inline(__always) func read32(_ at: Int) -> UInt64 {
            UInt64(UInt32(littleEndian: input.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        }
        @inline(__always) func round(_ accumulator: UInt64, _ lane: UInt64) -> UInt64 {
            (accumulator &+ lane &* prime2).rotatedLeft(31) &* prime1
        }
        @inline(__always) func mergeRound(_ accumulator: UInt64, _ value: UInt64) -> UInt64 {
            (accumulator ^ round(0, value)) &* prime1 &+ prime4
        }
        if length >= 32 {
            var v1 = seed &+ prime1 &+ prime2
            var v2 = seed &+ prime2
            var v3 = seed
            var v4 = seed &- prime1
            while offset + 32 <= length {
                v1 = round(v1, read64(offset))
                v2 = round(v2, read64(offset + 8))
                v3 = round(v3, read64(offset + 16))
                v4 = round(v4, read64(offset + 24))
                offset += 32
            }
            h = v1.rotatedLeft(1) &+ v2.rotatedLeft(7) &+ v3.rotatedLeft(12) &+ v4.rotatedLeft(18)
            h = mergeRound(h, v1)
            h = mergeRound(h, v2)
            h = mergeRound(h, v3)
            h = mergeRound(h, v4)
        } else {
            h = seed &+ prime5
        }
        h &+= UInt64(length)
        while offset + 8 <= length {
            h ^= round(0, read64(offset))
            h = h.rotatedLeft(27) &* prime1 &+ prime4
            offset += 8
        }
        if offset + 4 <= length {
            h ^= read32(offset) &* prime1
            h = h.rotatedLeft(23) &* prime2 &+ prime3
            offset += 4
        }
        while offset < length {
            h ^= UInt64(input[offset]) &* prime5
            h = h.rotatedLeft(11) &* prime1
            offset += 1
        }
        h ^= h >> 33
        h &*= prime2
        h ^= h >> 29
        h &*= prime3
        h ^= h >> 32
        return h
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}

/// Standard base64 (RFC 4648 §4) with padding.
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let word = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(word >> 18 & 0x3F)])
            out.append(alphabet[Int(word >> 12 & 0x3F)])
            out.append(index + 1 < bytes.count ? alphabet[Int(word >> 6 & 0x3F)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(word & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes, or nil for text that is not canonical padded base64.
    package static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        func digit(_ c: UInt8) -> UInt32? {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): return 62
            case UInt8(ascii: "/"): return 63
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var index = text.startIndex
        while index < text.endIndex {
            let isLast = index + 4 == text.endIndex
            let padding = isLast ? (text[index + 3] == UInt8(ascii: "=") ? (text[index + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var word: UInt32 = 0
            for k in 0..<(4 - padding) {
                guard let value = digit(text[index + k]) else { return nil }
                word |= value << UInt32(18 - 6 * k)
            }
            out.append(UInt8(truncatingIfNeeded: word >> 16))
            if padding < 2 { out.append(UInt8(truncatingIfNeeded: word >> 8)) }
            if padding < 1 { out.append(UInt8(truncatingIfNeeded: word)) }
            index += 4
        }
        return out
    }
}
