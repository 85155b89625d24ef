import Foundation
import Settee

/// `SetteeBenchmarks --attachments MB`: one attachment of MB megabytes put
/// from a file and read back to a file, with the throughput of each and the
/// process's peak resident memory during each (VmHWM, reset before each).
enum AttachmentBenchmark {
    static func run(megabytes: Int, in directory: URL) throws {
        let size = megabytes << 20
        let file = directory.appendingPathComponent("attachment.bin")
        let out = directory.appendingPathComponent("attachment-out.bin")
        do {
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            let handle = try FileHandle(forWritingTo: file)
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            var generator = SplitMix64(seed: 7)
            for _ in 0..<megabytes {
                chunk.withUnsafeMutableBytes { bytes in
                    for index in stride(from: 0, to: bytes.count, by: 8) { bytes.storeBytes(of: generator.next(), toByteOffset: index, as: UInt64.self) }
                }
                try handle.write(contentsOf: chunk)
            }
            try handle.close()
        }
        let db = try Database(at: directory.appendingPathComponent("attachment-db"))
        _ = try db.info()
        let baseline = PeakMemory().megabytes()
        print("Settee attachment benchmark: one \(megabytes) MB attachment, from a file and back to a file (process baseline \(baseline) MB)")
        var table = Table()
        let clock = ContinuousClock()

        var peak = PeakMemory()
        var start = clock.now
        let written = try db.putAttachment(Blob(file: file, contentType: "application/octet-stream"), named: "big.bin", of: "big", revision: nil)
        var time = clock.now - start
        table.add("attachment put (file → LMDB, digest + store)", throughput(size, time) + ", peak \(peak.megabytes()) MB")

        peak = PeakMemory()
        start = clock.now
        try db.writeAttachment("big.bin", of: "big", to: out)
        time = clock.now - start
        table.add("attachment get (LMDB → file)", throughput(size, time) + ", peak \(peak.megabytes()) MB")

        peak = PeakMemory()
        start = clock.now
        var bytes = 0
        var touched: UInt8 = 0
        try db.readAttachment("big.bin", of: "big") { chunk in
            // One byte a page: every page of the body is read from the map.
            for offset in stride(from: 0, to: chunk.count, by: 4096) { touched ^= chunk[offset] }
            bytes += chunk.count
        }
        withExtendedLifetime(touched) {}
        time = clock.now - start
        precondition(bytes == size, "read \(bytes) of \(size) bytes")
        table.add("attachment read (chunks in place, every page touched)", throughput(size, time) + ", peak \(peak.megabytes()) MB")

        peak = PeakMemory()
        start = clock.now
        _ = try db.putAttachment(Blob(file: file, contentType: "application/octet-stream"), named: "copy.bin", of: "big", revision: written.revision)
        time = clock.now - start
        table.add("attachment put of bytes already stored (digest only)", throughput(size, time) + ", peak \(peak.megabytes()) MB")
        // The same bytes through memory: a Blob holding Data, and attachment(_:of:) reading into one.
        var data: Data? = try Data(contentsOf: file)
        data![0] ^= 0xFF  // other bytes than the file's, so they are stored anew
        peak = PeakMemory()
        let inMemoryBaseline = peak.megabytes()
        start = clock.now
        _ = try db.putAttachment(Blob(data: data!), named: "memory.bin", of: "memory", revision: nil)
        time = clock.now - start
        table.add("attachment put from Data in memory (new bytes)", throughput(size, time) + ", peak \(peak.megabytes() - inMemoryBaseline) MB above the Data")
        data = nil
        peak = PeakMemory()
        start = clock.now
        let read = try db.attachment("memory.bin", of: "memory")
        time = clock.now - start
        precondition(read?.data?.count == size)
        table.add("attachment(_:of:) into Data", throughput(size, time) + ", peak \(peak.megabytes()) MB")
        table.print()
        try? FileManager.default.removeItem(at: file)
        try? FileManager.default.removeItem(at: out)
    }

    private static func throughput(_ bytes: Int, _ time: Duration) -> String {
        let seconds = time / .seconds(1)
        return String(format: "%.0f MB/s (%.2f s)", Double(bytes) / Double(1 << 20) / seconds, seconds)
    }
}
