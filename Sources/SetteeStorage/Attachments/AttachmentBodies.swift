import CSetteeLMDB
package import Foundation
import SetteeCore

/// The bytes of attachments, stored once per digest however many documents
/// and revisions refer to them, and removed when the last reference goes —
/// in the write transaction of the document that changes the references, so
/// a crash never leaves a half-written body or one nothing refers to.
///
/// Tables: `attachments` (16-byte MD5 → u64 reference count ‖ u64 length,
/// little-endian; ‖ u64 decoded length for a body stored gzip-encoded, as
/// CouchDB stores compressible types, its MD5 that of the encoded bytes) and `attachment-chunks` (MD5 ‖ u32 chunk number,
/// big-endian → up to ``chunkBytes`` of the body), so that a large body is
/// written and read a chunk at a time.
package struct AttachmentBodies: Sendable {
    package static let referencesTable = "attachments"
    package static let chunksTable = "attachment-chunks"
    /// The size of a chunk: large enough that LMDB's overhead per value is
    /// nothing, small enough that one is cheap to hold.
    package static let chunkBytes = 1 << 20

    package let references: LMDBTable
    package let chunks: LMDBTable
    private let path: String
    private let environment: LMDBEnvironment

    /// Opens (creating in a writable database) the tables; nil for a database
    /// opened read-only that has never stored an attachment.
    package init?(environment: LMDBEnvironment) throws {
        if environment.isReadOnly, try !environment.tableNames().contains(Self.referencesTable) { return nil }
        let tables = try environment.openDatabases([Self.referencesTable, Self.chunksTable])
        references = tables[0]
        chunks = tables[1]
        path = environment.path
        self.environment = environment
    }

    /// The MD5 and length of a file's bytes.
    package static func digest(ofFile url: URL) throws -> (digest: [UInt8], length: Int) {
        var md5 = MD5()
        var length = 0
        try forEachChunk(ofFile: url) { chunk in
            md5.update(chunk)
            length += chunk.count
        }
        return (md5.finalize(), length)
    }

    /// Compresses a file as gzip (CouchDB's level 8) into `target`; returns
    /// the decoded and encoded lengths and the MD5 of the encoded bytes.
    package static func compress(file: URL, into target: URL) throws -> (length: Int, encodedLength: Int, digest: [UInt8]) {
        guard FileManager.default.createFile(atPath: target.path, contents: nil),
              let output = FileHandle(forWritingAtPath: target.path) else {
            throw StorageError(code: errno, operation: "creating the temporary file \(target.path)")
        }
        defer { try? output.close() }
        let deflater = Gzip.Deflater()
        var md5 = MD5()
        var length = 0, encodedLength = 0
        var pending = [UInt8]()
        func write(_ piece: UnsafeRawBufferPointer) throws {
            md5.update(piece)
            encodedLength += piece.count
            pending.append(contentsOf: piece)
            if pending.count >= chunkBytes {
                try output.write(contentsOf: pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
        try forEachChunk(ofFile: file) { chunk in
            length += chunk.count
            try deflater.feed(chunk, write)
        }
        try deflater.finish(write)
        try output.write(contentsOf: pending)
        return (length, encodedLength, md5.finalize())
    }

    /// The number of bytes a gzip file inflates into.
    /// - Throws: ``DocumentError`` `bad_request` when it is not gzip.
    package static func decodedLength(ofGzipFile file: URL) throws -> Int {
        var length = 0
        do {
            let inflater = try Gzip.Inflater()
            try forEachChunk(ofFile: file) { chunk in try inflater.feed(chunk) { length += $0.count } }
            try inflater.finish()
        } catch is Gzip.Failure {
            throw DocumentError(.badRequest, "attachment bytes sent with \"encoding\": \"gzip\" are not gzip")
        }
        return length
    }

    /// Hands `source`'s bytes to `body` a chunk (``chunkBytes``) at a time.
    private static func forEachChunk(of source: AttachmentSource, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        switch source {
        case .bytes(let bytes):
            try bytes.withUnsafeBytes { all in
                var offset = 0
                while offset < all.count {
                    let end = min(offset + chunkBytes, all.count)
                    try body(UnsafeRawBufferPointer(rebasing: all[offset..<end]))
                    offset = end
                }
            }
        case .file(let url):
            try forEachChunk(ofFile: url, body)
        case .temporaryFile(let file):
            try forEachChunk(ofFile: file.url, body)
        }
    }

    /// Reads a file a chunk at a time into one reused buffer.
    private static func forEachChunk(ofFile url: URL, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let descriptor = open(url.path, O_RDONLY)
        guard descriptor >= 0 else {
            throw StorageError(code: errno, operation: "opening the attachment file \(url.path)")
        }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            // Fill the whole buffer (a pipe returns less), so chunks are full but for the last.
            var filled = 0
            while filled < chunkBytes {
                let count = read(descriptor, buffer.baseAddress! + filled, chunkBytes - filled)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw StorageError(code: errno, operation: "reading the attachment file \(url.path)")
                }
                if count == 0 { break }
                filled += count
            }
            if filled == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<filled]))
            if filled < chunkBytes { return }
        }
    }

    /// What is stored for a digest: its reference count, the length of the
    /// bytes stored, and, for bytes stored gzip-encoded, their decoded length.
    package struct Entry: Sendable, Equatable {
        package var count: UInt64
        package var length: UInt64
        package var decodedLength: UInt64?

        /// Whether the bytes are stored gzip-encoded.
        package var isEncoded: Bool { decodedLength != nil }
    }

    /// The entry stored for `digest`, or nil.
    package func entry(_ digest: [UInt8], in transaction: LMDBTransaction) throws -> Entry? {
        guard let value = try transaction.get(references, digest) else { return nil }
        guard value.count == 16 || value.count == 24 else {
            throw StorageError.damagedRecord("an attachment's reference count", in: path, "an attachment's reference record is \(value.count) bytes where it takes 16 or 24")
        }
        return Entry(count: UInt64(littleEndian: value.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                     length: UInt64(littleEndian: value.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                     decodedLength: value.count == 24 ? UInt64(littleEndian: value.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) : nil)
    }

    private func setEntry(_ digest: [UInt8], _ entry: Entry, in transaction: LMDBTransaction) throws {
        var value = [UInt8]()
        value.reserveCapacity(24)
        withUnsafeBytes(of: entry.count.littleEndian) { value.append(contentsOf: $0) }
        withUnsafeBytes(of: entry.length.littleEndian) { value.append(contentsOf: $0) }
        if let decoded = entry.decodedLength { withUnsafeBytes(of: decoded.littleEndian) { value.append(contentsOf: $0) } }
        try transaction.put(references, digest, value)
    }

    private static func chunkKey(_ digest: [UInt8], _ number: UInt32) -> [UInt8] {
        var key = digest
        withUnsafeBytes(of: number.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// Adds `count` references to the body `digest`, storing it from `source`
    /// when it is not stored yet. The bytes written are checked against the
    /// digest and length (a file that changed since it was hashed is refused).
    package func retain(_ digest: [UInt8], count: UInt64, length: Int, encodedLength: Int? = nil, source: AttachmentSource?, name: String,
                        in transaction: LMDBTransaction) throws {
        if var existing = try entry(digest, in: transaction) {
            let existingLength = existing.decodedLength ?? existing.length
            guard existingLength == UInt64(length) else {
                throw DocumentError(.badRequest, "attachment \(name): its MD5 digest is that of a stored attachment of another length (\(existingLength) bytes, not \(length))")
            }
            // Bytes are stored by MD5, which can be made to collide: equal digests must mean equal bytes.
            if let source, try !storedBody(digest, equals: source, in: transaction) {
                throw DocumentError(.badRequest, "attachment \(name): its MD5 digest and length are those of other stored bytes (an MD5 collision); Settee stores attachments by digest and cannot keep both")
            }
            existing.count += count
            try setEntry(digest, existing, in: transaction)
            return
        }
        guard let source else {
            throw StorageError.damagedRecord("attachment \(name)", in: path, "attachment \(name) refers to a body that is not stored")
        }
        // A file may change between its hashing and this read: its bytes are hashed again as they are
        // stored. Bytes in memory were hashed where they are.
        var md5 = MD5()
        var isFile = false
        if case .file = source { isFile = true }
        if case .temporaryFile = source { isFile = true }
        let storedLength = encodedLength ?? length
        var written = 0
        var number: UInt32 = 0
        try transaction.withCursor(chunks) { cursor in
            func put(_ chunk: UnsafeRawBufferPointer) throws {
                if isFile { md5.update(chunk) }
                written += chunk.count
                try Self.chunkKey(digest, number).withUnsafeBytes { try cursor.put($0, chunk) }
                number += 1
            }
            try Self.forEachChunk(of: source, put)
        }
        guard written == storedLength, !isFile || md5.finalize() == digest else {
            throw DocumentError(.badRequest, "attachment \(name): its bytes changed while they were stored (\(written) bytes read where \(storedLength) were hashed)")
        }
        try setEntry(digest, Entry(count: count, length: UInt64(storedLength), decodedLength: encodedLength.map { _ in UInt64(length) }),
                     in: transaction)
    }

    /// Whether the body stored under `digest` holds exactly the bytes of
    /// `source`, compared a chunk at a time (the pages read are given back as
    /// the comparison goes, so a large body costs no memory).
    private func storedBody(_ digest: [UInt8], equals source: AttachmentSource, in transaction: LMDBTransaction) throws -> Bool {
        try transaction.withCursor(chunks) { cursor in
            var entry = try Self.chunkKey(digest, 0).withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
            var equal = true
            var sinceRelease = 0
            func compare(_ chunk: UnsafeRawBufferPointer) throws {
                guard equal else { return }
                guard let (key, value) = entry, key.count == 20, key.starts(with: digest), value.count == chunk.count,
                      memcmp(value.baseAddress!, chunk.baseAddress!, chunk.count) == 0 else {
                    equal = false
                    return
                }
                sinceRelease += chunk.count
                if sinceRelease >= 64 << 20 {
                    environment.releaseMappedPages()
                    sinceRelease = 0
                }
                entry = try cursor.next()
            }
            try Self.forEachChunk(of: source, compare)
            if sinceRelease > 0 { environment.releaseMappedPages() }
            // No chunk of the stored body left over.
            if equal, let (key, _) = entry, key.count == 20, key.starts(with: digest) { equal = false }
            return equal
        }
    }

    /// Removes `count` references to the body `digest`, and the body with the last.
    package func release(_ digest: [UInt8], count: UInt64, in transaction: LMDBTransaction) throws {
        guard var existing = try entry(digest, in: transaction) else { return }
        if existing.count > count {
            existing.count -= count
            try setEntry(digest, existing, in: transaction)
            return
        }
        _ = try transaction.delete(references, digest)
        // Chunks are full but for the last: the length says how many there are.
        let chunkCount = max(1, (existing.length + UInt64(Self.chunkBytes) - 1) / UInt64(Self.chunkBytes))
        for number in 0..<chunkCount {
            _ = try transaction.delete(chunks, Self.chunkKey(digest, UInt32(number)))
        }
    }

    /// Hands the body's bytes, decoded (inflated when stored gzip-encoded),
    /// to `body` a piece at a time; each is valid only during its call.
    /// Returns false when no body is stored under `digest`.
    @discardableResult
    package func forEachDecodedPiece(_ digest: [UInt8], in transaction: LMDBTransaction,
                                     _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let entry = try entry(digest, in: transaction) else { return false }
        guard entry.isEncoded else { return try forEachChunk(digest, in: transaction, body) }
        let inflater = try Gzip.Inflater()
        do {
            try forEachChunk(digest, in: transaction) { try inflater.feed($0, body) }
            try inflater.finish()
        } catch is Gzip.Failure {
            throw StorageError.damagedRecord("an attachment", in: path, "the attachment \(Data(digest).base64EncodedString()) is stored gzip-encoded and does not inflate")
        }
        return true
    }

    /// Hands the body's chunks, in order, to `body`; each is valid only
    /// during its call. Returns false when no body is stored under `digest`.
    @discardableResult
    package func forEachChunk(_ digest: [UInt8], in transaction: LMDBTransaction,
                              _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard try entry(digest, in: transaction) != nil else { return false }
        try transaction.withCursor(chunks) { cursor in
            var entry = try Self.chunkKey(digest, 0).withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
            while let (key, value) = entry, key.count == 20, key.starts(with: digest) {
                try body(value)
                entry = try cursor.next()
            }
        }
        return true
    }
}
