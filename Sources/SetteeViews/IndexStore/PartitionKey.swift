import Foundation
import SetteeCore

/// How a partitioned view keys its rows (CouchDB stores them under
/// `{p, Partition, Key}`): each row's full key begins with its document's
/// partition, `stuffed(partition) ‖ 0x00`, then the collation key as in a
/// global view. A partition's rows are thus one run of the index, in
/// CouchDB's collation order within it, and a partition query reads that run
/// only. Stuffing keeps `0x00` out of the partition's bytes, so the prefix
/// ends at the first `0x00`, and partitions follow each other in byte order.
///
/// The prefix counts as part of the row's encoded key (``IndexRow/encodedKey``),
/// so the back index and stored chunks need nothing else; grouping strips it
/// (``strip(_:)``).
package enum PartitionKey {
    /// The prefix of the rows of `partition`.
    package static func prefix(_ partition: String) -> [UInt8] {
        var prefix: [UInt8] = []
        var partition = partition
        partition.withUTF8 { CollationKey.appendStuffed(UnsafeRawBufferPointer($0), to: &prefix) }
        prefix.append(0)
        return prefix
    }

    /// Appends the prefix of the partition of document `id` (the bytes before
    /// its first colon; none for an id without one, such as a design
    /// document's, whose rows no partition query reads).
    @inline(__always)
    package static func append(partitionOf id: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var end = 0
        while end < id.count, id[end] != UInt8(ascii: ":") { end += 1 }
        if end < id.count { CollationKey.appendStuffed(UnsafeRawBufferPointer(rebasing: id[..<end]), to: &out) }
        out.append(0)
    }

    /// An encoded key without its partition prefix (through the first `0x00`).
    package static func strip(_ encodedKey: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard let base = encodedKey.baseAddress, let zero = memchr(base, 0, encodedKey.count) else { return encodedKey }
        let start = UnsafeRawPointer(zero) - base + 1
        return UnsafeRawBufferPointer(rebasing: encodedKey[start...])
    }

    /// `range` kept within the rows of the partition whose prefix is `prefix`:
    /// each bound prefixed, and open bounds closed at the partition's ends.
    package static func range(_ range: IndexRange, within prefix: [UInt8]) -> IndexRange {
        // The partition's rows end before `stuffed(partition) ‖ 0x01`.
        var end = prefix
        end[end.count - 1] = 0x01
        return IndexRange(
            lower: range.lower.map { IndexBound(bytes: prefix + $0.bytes, inclusive: $0.inclusive) } ?? IndexBound(bytes: prefix, inclusive: true),
            upper: range.upper.map { IndexBound(bytes: prefix + $0.bytes, inclusive: $0.inclusive) } ?? IndexBound(bytes: end, inclusive: false))
    }
}
