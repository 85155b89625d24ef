import Foundation
import Logging

/// The `settee` tool's log handler: one line per message on standard error,
/// as swift-log's `StreamLogHandler` writes them
/// (`2026-11-26T08:00:00+0000 info settee.serve : key=value [Source] message`).
///
/// Unlike `StreamLogHandler`, it formats the metadata only when a message is
/// written, not each time metadata is set: a server sets a request id on
/// its logger for every request, and most requests log nothing.
struct StandardErrorLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = LoggingSystem.metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
        let pretty = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = "\(Self.timestamp()) \(event.level) \(label) :\(pretty) [\(event.source)] \(event.message)\n"
        Self.lock.withLock {
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
                if written <= 0 {
                    if written < 0, errno == EINTR { continue }
                    break
                }
                offset += written
            }
        }
    }

    /// One message at a time: lines from several threads do not interleave.
    private static let lock = NSLock()

    private static func timestamp() -> String {
        var now = time(nil)
        var local = tm()
        localtime_r(&now, &local)
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
