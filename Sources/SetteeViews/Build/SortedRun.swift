import Foundation
import SetteeCore
import SetteeStorage

/// Key/value entries in key order, spilled to disk by a large new index's
/// build (see ``ViewIndexer``) and read back once by ``SortedRunMerge``.
///
/// The file is made in the database's folder and unlinked at once: it takes
/// no memory (unlike a temporary folder on tmpfs), nothing else can open it,
/// and it goes when the run does, or with the process, however that ends.
/// Written through a buffer, read back through a read-only map whose pages
/// are let go as the merge passes them.
///
/// Entries are `key length, value length` (native 32-bit integers), then the
/// key and value bytes.
package final class SortedRun: @unchecked Sendable {
    // Unchecked: a run is written by one thread; once complete (mapped, and
    // no longer changed) it is handed to those that merge it.
    private let descriptor: Int32
    private let path: String
    /// Entries gathered before they are written to the file: ``bufferBytes``
    /// of memory, written into directly (appends to an array cost several
    /// times the bytes they copy); nil once the run is complete.
    private var buffer: UnsafeMutableRawPointer?
    private var buffered = 0
    package private(set) var count = 0
    private var length = 0
    private var map: UnsafeRawBufferPointer?

    /// Bytes gathered before they are written to the file.
    private static let bufferBytes = 1 << 20

    /// An empty run in `directory` (the database's folder).
    package init(in directory: String) throws {
        var template = Array((directory + "/settee-run-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard descriptor >= 0 else {
            throw StorageError(code: errno, operation: "making a temporary file in \(directory) for an index build")
        }
        self.descriptor = descriptor
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        unlink(path)
        buffer = .allocate(byteCount: Self.bufferBytes, alignment: 16)
    }

    deinit {
        buffer?.deallocate()
        if let map { munmap(UnsafeMutableRawPointer(mutating: map.baseAddress), map.count) }
        close(descriptor)
    }

    /// Adds an entry after the last (keys must come in order).
    package func append(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        guard let buffer else { preconditionFailure("an entry appended to a complete run") }
        let entryLength = 8 + key.count + value.count
        if buffered + entryLength > Self.bufferBytes { try writeBuffer() }
        guard entryLength <= Self.bufferBytes else {
            // Larger than the buffer: written on its own.
            try withUnsafeBytes(of: (UInt32(key.count), UInt32(value.count))) { try writeAll($0) }
            try writeAll(key)
            try writeAll(value)
            count += 1
            return
        }
        let entry = buffer + buffered
        entry.storeBytes(of: UInt32(key.count), as: UInt32.self)
        entry.storeBytes(of: UInt32(value.count), toByteOffset: 4, as: UInt32.self)
        if let base = key.baseAddress { (entry + 8).copyMemory(from: base, byteCount: key.count) }
        if let base = value.baseAddress { (entry + 8 + key.count).copyMemory(from: base, byteCount: value.count) }
        buffered += entryLength
        count += 1
    }

    /// Writes what is still buffered, and maps the file for reading: the
    /// run is complete (and may be handed to other threads).
    package func finishWriting() throws {
        try writeBuffer()
        buffer?.deallocate()
        buffer = nil
        guard length > 0 else { return }
        guard let address = mmap(nil, length, PROT_READ, MAP_PRIVATE, descriptor, 0), address != MAP_FAILED else {
            throw StorageError(code: errno, operation: "reading back a temporary file of an index build in \(path)")
        }
        madvise(address, length, MADV_SEQUENTIAL)
        map = UnsafeRawBufferPointer(start: address, count: length)
    }

    private func writeBuffer() throws {
        guard let buffer, buffered > 0 else { return }
        try writeAll(UnsafeRawBufferPointer(start: buffer, count: buffered))
        buffered = 0
    }

    /// Writes `bytes` at the end of the file.
    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress else { return }
        var written = 0
        while written < bytes.count {
            let result = write(descriptor, base + written, bytes.count - written)
            if result < 0 {
                let error = errno
                if error == EINTR { continue }
                throw StorageError(code: error, operation: "writing a temporary file of an index build in \(path)",
                                   explanation: error == ENOSPC ? "no space left on the device for the sorted rows of the new index, "
                                       + "kept in temporary files beside the database (about the index's size) until they are merged into it; "
                                       + "the next update builds the index again from the start" : nil)
            }
            written += result
        }
        length += bytes.count
    }

    /// The run's bytes (once ``finishWriting()`` has mapped them).
    fileprivate var bytes: UnsafeRawBufferPointer {
        map ?? UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// Lets go of the mapped pages before `offset` (read already).
    fileprivate func release(before offset: Int) {
        guard let base = map?.baseAddress else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let end = offset / page * page
        if end > 0 { madvise(UnsafeMutableRawPointer(mutating: base), end, MADV_DONTNEED) }
    }
}

/// The entries of several ``SortedRun``s in key order: a k-way merge on a
/// binary heap of the runs' next entries. Entries with equal keys come in
/// the order of their runs. Its ``position`` can be taken and restored (a
/// write that ran out of map room runs again from where it began).
package struct SortedRunMerge {
    private struct Source {
        let run: SortedRun
        let bytes: UnsafeRawBufferPointer
        var offset = 0
        /// The entry at `offset` (empty past the last).
        var key = UnsafeRawBufferPointer(start: nil, count: 0)
        var value = UnsafeRawBufferPointer(start: nil, count: 0)

        init(run: SortedRun, bytes: UnsafeRawBufferPointer) {
            self.run = run
            self.bytes = bytes
        }

        var isDone: Bool { offset >= bytes.count }

        /// Reads the entry at `offset`.
        mutating func load() {
            guard !isDone, let base = bytes.baseAddress else { return }
            let keyLength = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let valueLength = Int(bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            key = UnsafeRawBufferPointer(start: base + offset + 8, count: keyLength)
            value = UnsafeRawBufferPointer(start: base + offset + 8 + keyLength, count: valueLength)
        }
    }

    private var sources: [Source]
    /// Indices of the sources with entries left, as a heap on their next keys.
    private var heap: [Int] = []
    /// Bytes read since the runs' pages were last let go.
    private var sinceRelease = 0

    /// Bytes read from the runs between two releases of their pages.
    private static let releaseInterval = 16 << 20

    /// The merge of complete runs (see ``SortedRun/finishWriting()``).
    package init(_ runs: [SortedRun]) {
        sources = runs.map { Source(run: $0, bytes: $0.bytes) }
        rebuildHeap()
    }

    /// Where each run is: for ``restore(_:)``.
    package var position: [Int] { sources.map(\.offset) }

    /// Goes back to a ``position`` taken before.
    package mutating func restore(_ position: [Int]) {
        for index in sources.indices { sources[index].offset = position[index] }
        rebuildHeap()
    }

    private mutating func rebuildHeap() {
        for index in sources.indices { sources[index].load() }
        heap = sources.indices.filter { !sources[$0].isDone }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    /// Whether source `a`'s next entry comes before `b`'s.
    private func precedes(_ a: Int, _ b: Int) -> Bool {
        let order = compareBytes(sources[a].key, sources[b].key)
        return order != 0 ? order < 0 : a < b
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = parent * 2 + 1
            guard left < heap.count else { return }
            var least = left
            if left + 1 < heap.count, precedes(heap[left + 1], heap[left]) { least = left + 1 }
            guard precedes(heap[least], heap[parent]) else { return }
            heap.swapAt(least, parent)
            parent = least
        }
    }

    /// The next entry in key order (valid until the merge moves on), or nil.
    package mutating func next() -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        guard let source = heap.first else { return nil }
        let entry = (key: sources[source].key, value: sources[source].value)
        let length = 8 + entry.key.count + entry.value.count
        sinceRelease += length
        if sinceRelease >= Self.releaseInterval {
            // Every run's pages before its next entry (this one's, for the entry handed out).
            sinceRelease = 0
            for index in sources.indices { sources[index].run.release(before: sources[index].offset) }
        }
        sources[source].offset += length
        if sources[source].isDone {
            heap[0] = heap[heap.count - 1]
            heap.removeLast()
        } else {
            sources[source].load()
        }
        if heap.count > 1 { siftDown(0) }
        return entry
    }
}
