import Foundation
import Testing

/// The built `settee` tool, run as a child process (for tests that kill it or
/// measure its memory). It is found next to the test bundle, or at
/// `SETTEE_EXECUTABLE` when that is set.
struct SetteeExecutable {
    let url: URL

    static func find() throws -> SetteeExecutable {
        if let path = ProcessInfo.processInfo.environment["SETTEE_EXECUTABLE"] {
            return SetteeExecutable(url: URL(fileURLWithPath: path))
        }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("settee")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return SetteeExecutable(url: candidate) }
            directory.deleteLastPathComponent()
        }
        throw SetteeExecutableError(message: "the settee executable was not found near \(CommandLine.arguments[0]); build it or set SETTEE_EXECUTABLE")
    }

    /// Starts `settee arguments…`, with standard input from `input` (or /dev/null)
    /// and standard output and error written to files in `directory`.
    func start(_ arguments: [String], input: URL? = nil, in directory: URL) throws -> ChildProcess {
        let name = UUID().uuidString
        let output = directory.appendingPathComponent("\(name).out")
        let errors = directory.appendingPathComponent("\(name).err")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input?.path ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errors.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([url.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, url.path, &actions, nil, argv, environ)
        guard status == 0 else { throw SetteeExecutableError(message: "posix_spawn failed with \(status)") }
        return ChildProcess(pid: pid, output: output, errors: errors)
    }

    /// Runs `settee arguments…` to its end.
    func run(_ arguments: [String], input: URL? = nil, in directory: URL) throws -> ChildProcess.Outcome {
        try start(arguments, input: input, in: directory).wait()
    }
}

struct SetteeExecutableError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A running child process.
struct ChildProcess {
    let pid: pid_t
    let output: URL
    let errors: URL

    struct Outcome {
        /// The exit status, or nil when a signal ended the process.
        var exitStatus: Int32?
        var signal: Int32?
        var standardOutput: String
        var standardError: String
        /// The process's peak resident memory.
        var peakResidentBytes: Int
        /// The largest anonymous resident memory seen (RssAnon, sampled every
        /// few milliseconds): the process's own allocations, without the pages
        /// of the database file it maps, which count in ``peakResidentBytes``
        /// and grow with the data read however little memory the process holds.
        var peakAnonymousBytes: Int
    }

    func kill(_ signal: Int32 = SIGKILL) {
        _ = Foundation.kill(pid, signal)
    }

    /// Waits for the process to end, reading its peak resident memory (VmHWM)
    /// every few milliseconds meanwhile. (`wait4`'s `ru_maxrss` will not do: a
    /// child spawned with vfork inherits this process's high-water mark at exec.)
    func wait() throws -> Outcome {
        var status: Int32 = 0
        var peak = 0
        var peakAnonymous = 0
        while true {
            peak = max(peak, highWaterMark() ?? 0)
            peakAnonymous = max(peakAnonymous, statusKilobytes("RssAnon:").map { $0 * 1024 } ?? 0)
            let ended = waitpid(pid, &status, WNOHANG)
            if ended == pid { break }
            guard ended == 0 || errno == EINTR else { throw SetteeExecutableError(message: "waitpid failed with errno \(errno)") }
            usleep(5000)
        }
        let signalled = (status & 0x7F) != 0
        return Outcome(
            exitStatus: signalled ? nil : (status >> 8) & 0xFF,
            signal: signalled ? status & 0x7F : nil,
            standardOutput: (try? String(contentsOf: output, encoding: .utf8)) ?? "",
            standardError: (try? String(contentsOf: errors, encoding: .utf8)) ?? "",
            peakResidentBytes: peak,
            peakAnonymousBytes: peakAnonymous)
    }

    /// The process's peak resident memory so far, from /proc.
    private func highWaterMark() -> Int? {
        statusKilobytes("VmHWM:").map { $0 * 1024 }
    }

    /// A `kB` figure of /proc/PID/status, by its label.
    private func statusKilobytes(_ label: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(label) }),
              let kilobytes = Int(line.dropFirst(label.count).trimmingCharacters(in: .whitespaces).dropLast(3).trimmingCharacters(in: .whitespaces))
        else { return nil }
        return kilobytes
    }
}
