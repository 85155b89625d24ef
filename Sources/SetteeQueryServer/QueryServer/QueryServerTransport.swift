import SetteeCore
import SetteeJavaScript
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a ``QueryServer`` reads its commands and writes its answers: one JSON
/// text per line.
///
/// It is called only from the thread running the server.
public protocol QueryServerTransport: AnyObject {
    /// The next line of input without its newline, or `nil` at the end of input.
    /// The bytes stay valid until the next call.
    func readLine() -> UnsafeRawBufferPointer?
    /// Writes one line of output; the transport adds the newline.
    func writeLine(_ line: UnsafeRawBufferPointer)
}

/// A ``QueryServerTransport`` over two file descriptors, standard input and
/// output by default, as CouchDB runs its query server.
///
/// Output is buffered and written whenever the server waits for input, so an
/// answer and the log lines before it leave in one write.
public final class FileDescriptorTransport: QueryServerTransport {
    private let input: Int32
    private let output: Int32
    private var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    /// Unconsumed input is `buffer[start..<end]`.
    private var start = 0
    private var end = 0
    private var atEnd = false
    private var pending: [UInt8] = []

    /// - Parameters:
    ///   - input: The descriptor commands are read from (standard input).
    ///   - output: The descriptor answers are written to (standard output).
    public init(input: Int32 = 0, output: Int32 = 1) {
        self.input = input
        self.output = output
        capacity = 1 << 16
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
        pending.reserveCapacity(1 << 16)
    }

    deinit {
        flush()
        buffer.deallocate()
    }

    public func readLine() -> UnsafeRawBufferPointer? {
        flush()
        var scanned = start
        while true {
            if scanned < end, let newline = memchr(buffer + scanned, 0x0A, end - scanned) {
                let lineEnd = buffer.distance(to: newline)
                let line = UnsafeRawBufferPointer(start: buffer + start, count: lineEnd - start)
                start = lineEnd + 1
                return line
            }
            if atEnd {
                guard start < end else { return nil }
                let line = UnsafeRawBufferPointer(start: buffer + start, count: end - start)
                start = end
                return line
            }
            // Everything buffered has been searched: only new input can hold the newline.
            makeRoom()
            scanned = end
            let count = read(input, buffer + end, capacity - end)
            if count > 0 {
                end += count
            } else if count == 0 || errno != EINTR {
                atEnd = true
            }
        }
    }

    public func writeLine(_ line: UnsafeRawBufferPointer) {
        pending.append(contentsOf: line)
        pending.append(0x0A)
    }

    /// Writes buffered output now.
    public func flush() {
        var offset = 0
        while offset < pending.count {
            let written = pending.withUnsafeBytes { bytes in
                write(output, bytes.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                break
            }
            offset += written
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// Moves unread input to the front of the buffer and grows it when full.
    private func makeRoom() {
        if start > 0 {
            (buffer + 0).copyMemory(from: buffer + start, byteCount: end - start)
            end -= start
            start = 0
        }
        if end == capacity {
            capacity *= 2
            let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
            grown.copyMemory(from: buffer, byteCount: end)
            buffer.deallocate()
            buffer = grown
        }
    }
}
