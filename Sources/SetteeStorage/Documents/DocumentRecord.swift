import SetteeCore
/// How a document revision is stored in the `docs` table:
///
///     u64 seq (little-endian) | u32 rev generation | 16-byte rev hash | u8 flags | body JSON
///
/// The body is the JSON object without `_id`, `_rev` and `_deleted`. A
/// revision whose id is not 16 bytes (``Revision/hash``: an id another
/// program made, not 32 hex digits) has ``textRevisionFlag``, zeros in place
/// of the hash, and `u8 length | the id's bytes` between the flags and the body.
package struct DocumentRecord {
    package static let headerSize = 29
    package static let deletedFlag: UInt8 = 1
    /// The body has an `_attachments` member (see ``AttachmentStub``).
    package static let attachmentsFlag: UInt8 = 2
    /// The document has more than this revision: its tree is in the table
    /// `revtrees` (see ``RevisionTree``).
    package static let revisionTreeFlag: UInt8 = 4
    /// The revision id follows the header, with its length (see above).
    package static let textRevisionFlag: UInt8 = 8

    package let bytes: UnsafeRawBufferPointer

    /// The record stored for the document `id` in the database at `path`,
    /// checked before anything is read from it: a record shorter than its
    /// header, or whose body is not an object's braces, is not one Settee
    /// wrote (another program's, a page overwritten) and is reported as damage
    /// instead of being read past its end.
    package init(bytes: UnsafeRawBufferPointer, id: some Sequence<UInt8>, path: String) throws(StorageError) {
        guard bytes.count >= Self.headerSize + 2 else {
            throw Self.damage(id: id, path: path, "its record is \(bytes.count) bytes, shorter than the \(Self.headerSize)-byte header and an object")
        }
        let bodyOffset = Self.bodyOffset(in: bytes)
        guard bodyOffset + 2 <= bytes.count, bytes[bodyOffset] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else {
            throw Self.damage(id: id, path: path, "its record's body is not a JSON object")
        }
        self.bytes = bytes
    }

    private static func damage(id: some Sequence<UInt8>, path: String, _ problem: String) -> StorageError {
        let name = String(decoding: Array(id.prefix(200)), as: UTF8.self)
        return .damagedRecord("document \"\(name)\"", in: path, "the document \"\(name)\": \(problem)")
    }

    package var sequence: UInt64 { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)) }
    package var generation: UInt32 { UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)) }
    package var revision: Revision {
        guard hasTextRevision else { return Revision(generation: generation, hash: Array(bytes[12..<28])) }
        return Revision(generation: generation, hash: Array(bytes[(Self.headerSize + 1)..<bodyOffset]))
    }
    private var hasTextRevision: Bool { bytes[28] & Self.textRevisionFlag != 0 }
    private var bodyOffset: Int { Self.bodyOffset(in: bytes) }

    /// Where the body of `record` (at least a header and a byte long) begins:
    /// after the header, and the revision id when it is text.
    private static func bodyOffset(in record: UnsafeRawBufferPointer) -> Int {
        record[28] & textRevisionFlag == 0 ? headerSize : headerSize + 1 + Int(record[headerSize])
    }
    package var isDeleted: Bool { bytes[28] & Self.deletedFlag != 0 }
    package var hasAttachments: Bool { bytes[28] & Self.attachmentsFlag != 0 }
    package var hasRevisionTree: Bool { bytes[28] & Self.revisionTreeFlag != 0 }
    package var body: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[bodyOffset...]) }

    package static func encode(sequence: UInt64, revision: Revision, deleted: Bool, body: UnsafeRawBufferPointer, into out: inout [UInt8],
                               hasAttachments: Bool = false, hasRevisionTree: Bool = false) {
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(headerSize + body.count)
        withUnsafeBytes(of: sequence.littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: revision.generation.littleEndian) { out.append(contentsOf: $0) }
        let isText = revision.hash.count != 16
        if isText { out.append(contentsOf: repeatElement(0, count: 16)) } else { out.append(contentsOf: revision.hash) }
        out.append((deleted ? deletedFlag : 0) | (hasAttachments ? attachmentsFlag : 0) | (hasRevisionTree ? revisionTreeFlag : 0)
                   | (isText ? textRevisionFlag : 0))
        if isText { revision.appendHashWithLength(to: &out) }
        out.append(contentsOf: body)
    }

    package func document(id: String) -> Document {
        Document(id: id, revision: revision, sequence: sequence, isDeleted: isDeleted, body: Array(body))
    }

    /// Appends the document as map functions see it — `{"_id":…,"_rev":…` and the
    /// body's members — without building strings on the way.
    package func appendFullJSON(id: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        let generation = generation
        guard generation > 0, !hasTextRevision else {
            return Self.appendFullJSON(id: id, revision: revision, deleted: isDeleted, body: body, into: &out)
        }
        // What the generic path below writes, with no per-byte appends: index
        // builds read every changed document so (`"_rev":"N-hash"` into a
        // buffer on the stack, the rest copied in runs).
        let members = UnsafeRawBufferPointer(rebasing: bytes[(Self.headerSize + 1)...]) // no text revision here
        let needed = out.count + id.count + members.count + 96
        if needed > out.capacity { out.reserveCapacity(max(needed, out.capacity * 2)) }
        Self.appendStatic(#"{"_id":"#, to: &out)
        JSONWriter.writeString(utf8: id.assumingMemoryBound(to: UInt8.self), into: &out)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            let revision: StaticString = #","_rev":""#
            UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: revision.utf8Start, byteCount: revision.utf8CodeUnitCount)
            var length = revision.utf8CodeUnitCount
            // The generation's digits, written backwards then turned round.
            let digitsStart = length
            var rest = generation
            repeat {
                buffer[length] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                length &+= 1
                rest /= 10
            } while rest > 0
            var generationDigits = UnsafeMutableBufferPointer(rebasing: buffer[digitsStart..<length])
            generationDigits.reverse()
            buffer[length] = UInt8(ascii: "-")
            length &+= 1
            let digits: StaticString = "0123456789abcdef"
            for offset in 12..<28 {
                let byte = bytes[offset]
                buffer[length] = digits.utf8Start[Int(byte >> 4)]
                buffer[length &+ 1] = digits.utf8Start[Int(byte & 15)]
                length &+= 2
            }
            buffer[length] = UInt8(ascii: "\"")
            length &+= 1
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<length]))
        }
        if isDeleted { Self.appendStatic(#","_deleted":true"#, to: &out) }
        // The body is `{…}`: its opening brace gives way to the members.
        if members.first != UInt8(ascii: "}") { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: members)
    }

    private static func appendStatic(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// `{"_id":…,"_rev":…` + the body's members (+ `"_deleted":true` for a tombstone).
    package static func fullJSON(id: String, revision: Revision, deleted: Bool, body: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + id.utf8.count + 60)
        var id = id
        id.withUTF8 { id in
            appendFullJSON(id: UnsafeRawBufferPointer(id), revision: revision, deleted: deleted, body: body, into: &out)
        }
        return out
    }

    private static func appendFullJSON(id: UnsafeRawBufferPointer, revision: Revision, deleted: Bool,
                                       body: some Collection<UInt8>, into out: inout [UInt8]) {
        out.append(contentsOf: #"{"_id":"#.utf8)
        JSONWriter.writeString(utf8: id.assumingMemoryBound(to: UInt8.self), into: &out)
        out.append(contentsOf: #","_rev":""#.utf8)
        if revision.generation == 0 || revision.hash.count != 16 {
            // `0-N` of a local document, `N-<text id>` (which needs no escaping, see ``Revision/hash(ofID:)``).
            out.append(contentsOf: revision.description.utf8)
        } else {
            JSONWriter.writeNumber(Double(revision.generation), into: &out)
            out.append(UInt8(ascii: "-"))
            let digits: StaticString = "0123456789abcdef"
            for byte in revision.hash {
                out.append(digits.utf8Start[Int(byte >> 4)])
                out.append(digits.utf8Start[Int(byte & 15)])
            }
        }
        out.append(UInt8(ascii: "\""))
        if deleted { out.append(contentsOf: #","_deleted":true"#.utf8) }
        // The body is `{…}`: drop its opening brace, keep its members.
        let members = body.dropFirst()
        if members.first != UInt8(ascii: "}") { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: members)
    }
}
