import Foundation
import SetteeCore
package import SetteeStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
package import Darwin
#endif

/// One build of an index at a time across processes, as CouchDB has one
/// indexer per index: a process about to build waits while another builds
/// the same index, then reads the index's state afresh and maps only what
/// that build left (usually nothing), instead of every process mapping
/// every document.
///
/// Each index is one byte of a lock file in the database directory
/// (`index-builds.lock`), at an offset taken from its signature, locked
/// with an open-file-description lock: held by this ``Database``'s open
/// file, released when the build ends or the process dies. Two signatures
/// sharing an offset only wait for each other needlessly. Offsets are
/// locked in increasing order, so two builds of overlapping sets of
/// indexes cannot wait for each other in a cycle.
package final class IndexBuildLocks: Sendable {
    package let path: String
    private let descriptor: Int32

    /// The lock file's name in the database directory.
    package static let fileName = "index-builds.lock"

    package init(directory: String) throws(StorageError) {
        path = directory + "/" + Self.fileName
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        // A database whose directory cannot be written (read-only media,
        // another user's files) is opened read-only: it builds no index, so
        // there is nothing to lock.
        guard descriptor >= 0 || [EROFS, EACCES, EPERM].contains(errno) else {
            throw StorageError(code: errno, operation: "opening the index build lock \(path)")
        }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Runs `body` holding the build locks of these index signatures,
    /// waiting first while another process holds any of them.
    package func withLocks<T>(_ signatures: some Sequence<String>, _ body: () throws -> T) throws -> T {
        guard descriptor >= 0 else { return try body() }
        var held: [Int64] = []
        defer { for offset in held.reversed() { _ = setLock(F_UNLCK, at: offset) } }
        for offset in Set(signatures.map(Self.offset)).sorted() {
            while setLock(F_WRLCK, at: offset) != 0 {
                guard errno == EINTR else {
                    throw StorageError(code: errno, operation: "locking an index build (offset \(offset)) in \(path)")
                }
            }
            held.append(offset)
        }
        return try body()
    }

    /// The byte that stands for an index: the first 24 bits of its signature (hex SHA-256).
    package static func offset(_ signature: String) -> Int64 {
        Int64(UInt32(signature.prefix(6), radix: 16) ?? 0)
    }

    /// Takes (waiting) or releases the lock of one byte; 0 or -1 with `errno`.
    private func setLock(_ type: Int32, at offset: Int64) -> Int32 {
        #if canImport(Glibc)
        var lock = Glibc.flock()
        #else
        var lock = Darwin.flock()
        #endif
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(offset)
        lock.l_len = 1
        // Open file description locks (Linux's F_OFD_SETLKW): owned by this
        // open file, not the process, so that another Database on the same
        // directory in this process is excluded too, and closing another
        // descriptor of the file releases nothing.
        return fcntl(descriptor, Self.setLockWaiting, &lock)
    }

    #if os(Linux)
    /// `F_OFD_SETLKW`, which Glibc declares only for _GNU_SOURCE.
    private static let setLockWaiting: Int32 = 38
    #else
    /// Elsewhere, a process's own record lock: one Database per directory
    /// per process, which its `indexing` lock serialises.
    private static let setLockWaiting = F_SETLKW
    #endif
}
