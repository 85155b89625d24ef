import Foundation
import Logging
import Synchronization

/// The benchmark's logger: keeps the metadata of the last "indexed" line (the
/// CPU time each stage of an index update took) and prints warnings and worse.
final class IndexedLog: Sendable {
    private let last = Mutex<Logger.Metadata?>(nil)

    /// The metadata of the last "indexed" line, taken (the next read is nil
    /// until another update logs one).
    func take() -> Logger.Metadata? {
        last.withLock { line in
            defer { line = nil }
            return line
        }
    }

    func logger() -> Logger {
        var logger = Logger(label: "settee-bench") { label in Handler(log: self, printer: StreamLogHandler.standardError(label: label)) }
        logger.logLevel = .info
        return logger
    }

    private struct Handler: LogHandler {
        let log: IndexedLog
        var printer: StreamLogHandler
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            if event.message.description == "indexed" {
                log.last.withLock { $0 = metadata.merging(event.metadata ?? [:]) { $1 } }
            }
            if event.level >= .warning { printer.log(event: event) }
        }
    }
}
