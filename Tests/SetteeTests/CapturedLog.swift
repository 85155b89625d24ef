import Logging
import Synchronization

/// A logger whose messages a test reads back: each message with its metadata
/// as text.
final class CapturedLog: Sendable {
    typealias Entry = (level: Logger.Level, message: String, metadata: [String: String])

    private let store = Mutex<[Entry]>([])

    /// Everything logged so far, in order.
    var entries: [Entry] { store.withLock { $0 } }

    /// A logger that keeps messages of `level` and above here.
    func logger(level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: "settee.test") { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let entry: Entry = (event.level, event.message.description, all.mapValues(\.description))
            log.store.withLock { $0.append(entry) }
        }
    }
}
