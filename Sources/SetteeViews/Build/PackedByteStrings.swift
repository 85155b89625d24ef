import Foundation

/// Byte strings back to back in one buffer, with no array per string: a
/// batch's document ids, or the stored keys of rows to delete.
package struct PackedByteStrings: Sendable {
    package var bytes: [UInt8] = []
    /// Where each string ends in `bytes`.
    package var ends: [Int32] = []

    package func range(_ index: Int) -> Range<Int> {
        (index == 0 ? 0 : Int(ends[index - 1]))..<Int(ends[index])
    }

    package func string(_ index: Int) -> String {
        String(decoding: bytes[range(index)], as: UTF8.self)
    }

    package mutating func append(_ string: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: string)
        ends.append(Int32(bytes.count))
    }

    package mutating func removeAll(keepingCapacity: Bool) {
        bytes.removeAll(keepingCapacity: keepingCapacity)
        ends.removeAll(keepingCapacity: keepingCapacity)
    }

    package mutating func append(contentsOf other: PackedByteStrings) {
        let base = Int32(bytes.count)
        bytes.append(contentsOf: other.bytes)
        ends.append(contentsOf: other.ends.lazy.map { $0 + base })
    }
}
