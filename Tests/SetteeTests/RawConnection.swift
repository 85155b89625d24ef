import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to a test server written byte by byte, for what an HTTP
/// client library does not do: send half a request, leave without reading,
/// connect from another loopback address.
final class RawConnection: @unchecked Sendable {
    private let socket: Int32

    /// Connects to `127.0.0.1:port`, from `source` (a loopback address such as
    /// `127.0.0.7`) when given.
    init(port: Int, from source: String? = nil) throws {
        #if canImport(Glibc)
        let kind = Int32(SOCK_STREAM.rawValue)
        #else
        let kind = SOCK_STREAM
        #endif
        socket = Glibc.socket(AF_INET, kind, 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        if let source {
            var local = Self.address(source, port: 0)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { Glibc.close(socket); throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL) }
        }
        var remote = Self.address("127.0.0.1", port: port)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { Glibc.close(socket); throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED) }
    }

    private static func address(_ host: String, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }

    deinit { Glibc.close(socket) }

    /// Sends `text`; false when the server has closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Closes the connection at once.
    func close() {
        shutdown(socket, Int32(SHUT_RDWR))
    }

    /// What the server sent, and when it closed the connection.
    struct Received: Sendable {
        var text: String
        /// When the server closed the connection (timed on the reading
        /// thread, however late the calling task resumes); `nil` if it did not.
        var closedAt: Date?
        var closed: Bool { closedAt != nil }
    }

    /// What the server sends until it closes the connection or `seconds`
    /// pass, read on a thread of its own.
    func receive(for seconds: Double) async -> Received {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date().addingTimeInterval(seconds)
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let left = deadline.timeIntervalSinceNow
                    if left <= 0 { break }
                    var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                    guard poll(&descriptor, 1, Int32(left * 1000) + 1) > 0 else { continue }
                    let count = recv(socket, &buffer, buffer.count, 0)
                    if count <= 0 {
                        continuation.resume(returning: Received(text: String(decoding: received, as: UTF8.self), closedAt: Date()))
                        return
                    }
                    received += buffer[0..<count]
                }
                continuation.resume(returning: Received(text: String(decoding: received, as: UTF8.self), closedAt: nil))
            }
        }
    }
}
