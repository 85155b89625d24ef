import Foundation
import SetteeCore
import SetteeStorage

/// An attachment as `settee serve` streams it: what it is, and where its
/// bytes are stored, read back a chunk at a time with
/// ``Database/attachmentChunk(of:number:)``.
package struct StoredAttachment: Sendable {
    /// The content type, length, digest and revpos (a stored blob).
    package var blob: Blob
    /// The MD5 of the bytes.
    package var md5: [UInt8]
    /// The revision of the document holding it.
    package var revision: Revision
    /// The length of the bytes as stored gzip-encoded (a compressible type,
    /// as CouchDB stores it: chunks hold the encoded bytes); nil when they
    /// are stored as they are.
    package var encodedLength: Int?
    /// The number of bytes in each chunk but the last.
    package static var chunkBytes: Int { AttachmentBodies.chunkBytes }
}

extension Database {
    /// Attachment `name` of document `id`, without its bytes.
    /// - Throws: ``DocumentError`` `not_found` when the document is missing or
    ///   deleted ("missing", "deleted") or has no such attachment
    ///   ("Document is missing attachment").
    package func storedAttachment(_ name: String, of id: String) async throws -> StoredAttachment {
        try await background {
            let (stub, revision) = try self.store.attachmentStub(name, of: id)
            return try self.stored(stub, revision: revision)
        }
    }

    /// An attachment's stub and how its bytes are stored.
    func stored(_ stub: AttachmentStub, revision: Revision) throws -> StoredAttachment {
        let entry = try store.attachmentEntry(stub.digest)
        return StoredAttachment(blob: Blob(stub: stub, data: nil), md5: stub.digest, revision: revision,
                                encodedLength: entry?.isEncoded == true ? Int(entry!.length) : nil)
    }

    /// Chunk `number` of an attachment's bytes, each read in its own
    /// transaction; nil when the bytes are no longer stored (the last document
    /// holding them changed since ``storedAttachment(_:of:)``).
    package func attachmentChunk(of attachment: StoredAttachment, number: Int) async throws -> [UInt8]? {
        try await background { try self.store.attachmentChunk(attachment.md5, number: number) }
    }
}
