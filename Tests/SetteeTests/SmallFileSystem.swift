import Foundation

/// A small tmpfs, mounted for one test and unmounted after (as root): for a
/// disk that fills, or media that are read-only.
final class SmallFileSystem {
    let url: URL

    /// Whether this process can mount one (as root, with the right to mount).
    static let available: Bool = {
        guard getuid() == 0 else { return false }
        return SmallFileSystem(megabytes: 1) != nil
    }()

    init?(megabytes: Int) {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("settee-tmpfs-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", url.path]) else {
            try? FileManager.default.removeItem(at: url)
            return nil
        }
    }

    private var filler: URL { url.appendingPathComponent("filler") }

    /// Takes all the free space but `bytes` (written out: tmpfs holds no holes).
    func fill(leaving bytes: Int) throws {
        var stats = statvfs()
        guard statvfs(url.path, &stats) == 0 else { throw SetteeExecutableError(message: "statvfs failed") }
        let free = Int(stats.f_bavail) * Int(stats.f_frsize)
        try Data(count: max(free - bytes, 0)).write(to: filler)
    }

    func removeFiller() throws {
        try FileManager.default.removeItem(at: filler)
    }

    /// Remounts it read-only, standing for read-only media (as root,
    /// permission bits would not stop writes).
    func makeReadOnly() -> Bool {
        Self.run("/bin/mount", ["-o", "remount,ro", url.path])
    }

    deinit {
        // Lazily: detached now, gone once nothing has a file open in it.
        _ = Self.run("/bin/umount", ["--lazy", url.path])
        try? FileManager.default.removeItem(at: url)
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
