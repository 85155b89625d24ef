import CSetteeZlib

/// gzip (RFC 1952) through zlib: request bodies sent with
/// `Content-Encoding: gzip`, and attachments stored as CouchDB stores
/// compressible ones.
package enum Gzip {
    /// Why bytes could not be inflated.
    package enum Failure: Error, Sendable, Equatable {
        /// The bytes are not gzip, or are cut short.
        case notGzip
        /// Inflated, they would pass the limit given.
        case tooLarge
    }

    /// The bytes `gzip` inflates into, refused past `limit` bytes before
    /// more than that is held (a small body may inflate into gigabytes).
    /// Concatenated members inflate one after another, as `gunzip` does.
    package static func decompress(_ bytes: some Collection<UInt8>, limit: Int = .max) throws(Failure) -> [UInt8] {
        let input = Array(bytes)
        guard !input.isEmpty else { throw .notGzip }
        var output: [UInt8] = []
        var stream = z_stream()
        // 16 + 15: a gzip wrapper and the largest window.
        guard inflateInit2_(&stream, 16 + MAX_WBITS, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw .notGzip }
        defer { inflateEnd(&stream) }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var failure: Failure?
        input.withUnsafeBufferPointer { source in
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            stream.avail_in = uInt(source.count)
            while failure == nil {
                let status = chunk.withUnsafeMutableBufferPointer { target -> Int32 in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                guard produced <= limit - output.count else { failure = .tooLarge; break }
                output += chunk[0..<produced]
                switch status {
                case Z_STREAM_END:
                    // Another member may follow.
                    if stream.avail_in == 0 { return }
                    guard inflateReset(&stream) == Z_OK else { failure = .notGzip; return }
                case Z_OK:
                    continue
                case Z_BUF_ERROR where produced > 0:
                    continue
                default:
                    failure = .notGzip
                }
            }
        }
        if let failure { throw failure }
        return output
    }

    /// `bytes` compressed as gzip at `level` (0–9) with zlib's defaults
    /// otherwise (no name, no time), as CouchDB compresses attachments.
    package static func compress(_ bytes: some Collection<UInt8>, level: Int = 8) -> [UInt8] {
        let input = Array(bytes)
        var stream = z_stream()
        let clamped = Int32(max(0, min(9, level)))
        guard deflateInit2_(&stream, clamped, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY,
                            zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return [] }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))))
        let written = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target -> Int in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { return -1 }
                return target.count - Int(stream.avail_out)
            }
        }
        guard written >= 0 else { return [] }
        output.removeSubrange(written...)
        return output
    }
}
