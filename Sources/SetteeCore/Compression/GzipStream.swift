import CSetteeZlib
import Foundation

extension Gzip {
    /// Inflates gzip fed a piece at a time (an attachment stored gzip-encoded,
    /// read a chunk at a time), handing out what each piece inflates into.
    package final class Inflater {
        private var stream = z_stream()
        private var ended = false
        private var output = [UInt8](repeating: 0, count: 64 * 1024)

        package init() throws(Failure) {
            guard inflateInit2_(&stream, 16 + MAX_WBITS, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw .notGzip }
        }

        deinit { inflateEnd(&stream) }

        /// Inflates `bytes`, handing each piece of output to `body`.
        package func feed(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
            guard bytes.count > 0 else { return }
            stream.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            stream.avail_in = uInt(bytes.count)
            while true {
                if ended {
                    // Another member follows, as `gunzip` reads them.
                    guard stream.avail_in > 0 else { return }
                    guard inflateReset(&stream) == Z_OK else { throw Failure.notGzip }
                    ended = false
                }
                let (status, produced) = output.withUnsafeMutableBufferPointer { target -> (Int32, Int) in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, target.count - Int(stream.avail_out))
                }
                if produced > 0 { try output.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) } }
                switch status {
                case Z_STREAM_END:
                    ended = true
                case Z_OK, Z_BUF_ERROR:
                    // All input taken and no output held back: wait for more input.
                    if stream.avail_in == 0 && produced < output.count { return }
                    if status == Z_BUF_ERROR && produced == 0 { return }
                default:
                    throw Failure.notGzip
                }
            }
        }

        /// Checks that the input ended with a whole gzip member.
        package func finish() throws(Failure) {
            guard ended else { throw .notGzip }
        }
    }

    /// Compresses bytes fed a piece at a time as gzip at CouchDB's level 8
    /// (``compress(_:level:)`` on the whole gives the same bytes).
    package final class Deflater {
        private var stream = z_stream()
        private var output = [UInt8](repeating: 0, count: 64 * 1024)

        package init(level: Int = 8) {
            let clamped = Int32(max(0, min(9, level)))
            _ = deflateInit2_(&stream, clamped, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY,
                              zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        }

        deinit { deflateEnd(&stream) }

        /// Compresses `bytes`, handing each piece of output to `body`.
        package func feed(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
            guard bytes.count > 0 else { return }
            stream.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            stream.avail_in = uInt(bytes.count)
            try run(Z_NO_FLUSH, body)
        }

        /// Ends the stream, handing out the rest.
        package func finish(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
            stream.next_in = nil
            stream.avail_in = 0
            try run(Z_FINISH, body)
        }

        private func run(_ flush: Int32, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
            while true {
                let (status, produced) = output.withUnsafeMutableBufferPointer { target -> (Int32, Int) in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    let status = deflate(&stream, flush)
                    return (status, target.count - Int(stream.avail_out))
                }
                if produced > 0 { try output.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) } }
                if flush == Z_FINISH ? status == Z_STREAM_END : (stream.avail_in == 0 && produced < output.count) { return }
                if status != Z_OK && status != Z_BUF_ERROR { return }
            }
        }
    }

    /// The content types CouchDB stores gzip-encoded (its `[attachments]
    /// compressible_types` default: `text/*, application/javascript,
    /// application/json, application/xml`), compared without parameters
    /// and case.
    package static func isCompressible(contentType: String) -> Bool {
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return type.hasPrefix("text/") || type == "application/javascript" || type == "application/json" || type == "application/xml"
    }
}
