import Foundation
import Settee

/// A one-line progress bar on standard error, drawn only when standard error
/// is a terminal and at most ten times a second.
final class ProgressBar {
    private let label: String
    private let unit: String
    private let enabled = isatty(STDERR_FILENO) == 1
    private let started = ContinuousClock.now
    private var lastDraw: ContinuousClock.Instant?
    private var drew = false

    init(label: String, unit: String) {
        self.label = label
        self.unit = unit
    }

    /// - Parameters:
    ///   - done: Items finished so far.
    ///   - fraction: How much of the whole is done, when known.
    func update(done: Int, fraction: Double?) {
        guard enabled else { return }
        let now = ContinuousClock.now
        if let lastDraw, now - lastDraw < .milliseconds(100) { return }
        lastDraw = now
        let seconds = max((now - started) / .seconds(1), 0.001)
        let rate = Int(Double(done) / seconds)
        var line = "\r\(label) "
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

    /// Shows an index update's progress.
    func update(_ progress: IndexProgress) {
        update(done: progress.processed, fraction: Double(progress.processed) / Double(max(progress.total, 1)))
    }

    /// Clears the bar's line.
    func finish() {
        guard enabled, drew else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
