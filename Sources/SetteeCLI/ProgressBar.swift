import Foundation
import Settee

/// A one-line progress bar on standard error, drawn only when standard error
/// is a terminal and at most ten times a second.
final class ProgressBar {
    private let label: String
    private let unit: String
    private let enabled = isatty(STDERR_FILENO) == 1
    private var started = ContinuousClock.now
    private var lastDraw: ContinuousClock.Instant?
    private var drew = false
    /// The stage shown (its label), when not the bar's own.
    private var stage: String?

    init(label: String, unit: String) {
        self.label = label
        self.unit = unit
    }

    /// - Parameters:
    ///   - done: Items finished so far.
    ///   - fraction: How much of the whole is done, when known.
    ///   - stage: A later stage's label and unit (the rate starts again with it).
    func update(done: Int, fraction: Double?, stage: (label: String, unit: String)? = nil) {
        guard enabled else { return }
        let now = ContinuousClock.now
        if let stage, stage.label != self.stage {
            self.stage = stage.label
            started = now
            lastDraw = nil
        }
        if let lastDraw, now - lastDraw < .milliseconds(100) { return }
        lastDraw = now
        let seconds = max((now - started) / .seconds(1), 0.001)
        let rate = Int(Double(done) / seconds)
        let (label, unit) = stage ?? (label, unit)
        var line = "\r\u{1B}[2K\(label) "
        if let fraction {
            let width = 30
            let filled = Int((min(max(fraction, 0), 1) * Double(width)).rounded(.down))
            line += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            line += String(format: "%3d%% ", Int(min(fraction, 1) * 100))
        }
        line += "\(done) \(unit)  \(rate) \(unit)/s"
        FileHandle.standardError.write(Data(line.utf8))
        drew = true
    }

    /// Shows an index update's progress: documents mapped, then the entries
    /// of new indexes merged from sorted runs, if any.
    func update(_ progress: IndexProgress) {
        (mapErrors, firstMapErrors) = (progress.mapErrors, progress.firstMapErrors)
        if progress.toMerge > 0 {
            update(done: progress.merged, fraction: Double(progress.merged) / Double(progress.toMerge),
                   stage: ("merging sorted rows", "entries"))
        } else {
            update(done: progress.processed, fraction: Double(progress.processed) / Double(max(progress.total, 1)))
        }
    }

    /// Map calls that threw in the index update shown, and the first few.
    private var mapErrors = 0
    private var firstMapErrors: [MapError] = []

    /// Clears the bar's line; after an index update whose map functions
    /// threw, says so on standard error (terminal or not): how many, and
    /// the first few with their document and error.
    func finish() {
        if enabled, drew { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
        guard mapErrors > 0 else { return }
        var text = "settee: \(mapErrors) map function call\(mapErrors == 1 ? "" : "s") threw while indexing; "
            + "\(mapErrors == 1 ? "that document has" : "those documents have") no rows in "
            + "\(mapErrors == 1 ? "that view" : "those views") (`settee info` counts them as map_errors; -v logs each):\n"
        for error in firstMapErrors { text += "  \(error)\n" }
        if mapErrors > firstMapErrors.count { text += "  … and \(mapErrors - firstMapErrors.count) more\n" }
        FileHandle.standardError.write(Data(text.utf8))
        (mapErrors, firstMapErrors) = (0, [])
    }
}
