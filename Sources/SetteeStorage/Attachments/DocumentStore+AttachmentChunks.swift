import CSetteeLMDB
import Foundation
import SetteeCore

// Reading an attachment one chunk per read transaction, so that a reader that
// goes at its own pace (an HTTP response to a slow client) holds neither a
// transaction nor a thread between chunks. Bodies are stored by digest and
// never change, so chunks read in different transactions belong together; a
// body released in between (its last document changed) reads as missing.

extension DocumentStore {
    /// The stub of attachment `name` of the live document `id`, with the
    /// document's revision.
    /// - Throws: ``DocumentError`` `not_found` ("missing", "deleted" or
    ///   "Document is missing attachment").
    package func attachmentStub(_ name: String, of id: String) throws -> (stub: AttachmentStub, revision: Revision) {
        try environment.read { transaction in
            let stub = try attachmentStub(name, of: id, in: transaction)
            let revision = try record(id, in: transaction)!.revision
            return (stub, revision)
        }
    }

    /// Chunk `number` (of ``AttachmentBodies/chunkBytes`` bytes, the last
    /// shorter) of the body stored under `digest`, copied; nil when the body
    /// is not stored (any more).
    package func attachmentChunk(_ digest: [UInt8], number: Int) throws -> [UInt8]? {
        guard let bodies = attachmentBodies else { return nil }
        var key = digest
        withUnsafeBytes(of: UInt32(number).bigEndian) { key.append(contentsOf: $0) }
        return try environment.read { transaction in
            try transaction.get(bodies.chunks, key).map { Array($0) }
        }
    }

    /// How the body stored under `digest` is kept (its stored and decoded
    /// lengths); nil when it is not stored.
    package func attachmentEntry(_ digest: [UInt8]) throws -> AttachmentBodies.Entry? {
        guard let bodies = attachmentBodies else { return nil }
        return try environment.read { try bodies.entry(digest, in: $0) }
    }
}
