import Foundation
package import Logging
import Synchronization
import SetteeCore
import SetteeStorage

/// The CPU time an index update spent in each stage of its pipeline, summed
/// over the threads that ran the stage, and the process's CPU time over the
/// same span: what the line ending an update logs (see ``ViewIndexer``), to
/// tell where a build's time went.
package final class IndexingCPU: Sendable {
    package enum Stage: Int, CaseIterable {
        /// Reading changed documents out of LMDB into a batch.
        case reading
        /// The JavaScript workers mapping (and collation-encoding the keys).
        case mapping
        /// The updating thread gathering the workers' rows for the writer.
        case gathering
        /// Writing rows, computing and writing chunks, committing checkpoints.
        case writing
        /// JavaScript reduce calls for the chunks, on the workers.
        case reducing
    }

    private let nanoseconds = Mutex<[UInt64]>(Array(repeating: 0, count: Stage.allCases.count))
    private let processStart = IndexingCPU.now(CLOCK_PROCESS_CPUTIME_ID)

    /// Runs `body`, adding the CPU time this thread spent in it to `stage`.
    package func measure<T>(_ stage: Stage, _ body: () throws -> T) rethrows -> T {
        let start = Self.now(CLOCK_THREAD_CPUTIME_ID)
        defer {
            let spent = Self.now(CLOCK_THREAD_CPUTIME_ID) &- start
            nanoseconds.withLock { $0[stage.rawValue] &+= spent }
        }
        return try body()
    }

    /// Seconds of CPU per stage so far (`cpu.reading`, `cpu.mapping`,
    /// `cpu.gathering`, `cpu.writing`, `cpu.reducing`), and `cpu.other`: the
    /// process's CPU time since this began that no stage accounts for — the
    /// engine's own threads (garbage collection), the threads handing work
    /// on, and whatever else the process ran meanwhile.
    package var metadata: Logger.Metadata {
        let stages = nanoseconds.withLock { $0 }
        let process = Self.now(CLOCK_PROCESS_CPUTIME_ID) &- processStart
        let accounted = stages.reduce(0, +)
        let other = process > accounted ? process - accounted : 0
        var metadata: Logger.Metadata = ["cpu.other": "\(Self.seconds(other))"]
        for stage in Stage.allCases { metadata["cpu.\(stage)"] = "\(Self.seconds(stages[stage.rawValue]))" }
        return metadata
    }

    private static func seconds(_ nanoseconds: UInt64) -> String {
        String(format: "%.6f", Double(nanoseconds) / 1e9)
    }

    private static func now(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
