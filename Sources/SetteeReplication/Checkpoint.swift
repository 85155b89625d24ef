import Foundation
import Settee

/// The replication logs CouchDB's replicator keeps in `_local/<id>` at
/// both ends, read and written as CouchDB 3.x does, so that either
/// replicator resumes where the other stopped.
struct Checkpoint: Sendable {
    /// The most history entries kept (CouchDB's 50).
    static let historyLimit = 50

    /// Where to start and the history to carry on, from the logs found at
    /// the source and the target (`compare_replication_logs`): the source's
    /// `source_last_seq` when both logs are of the same session, else the
    /// `recorded_seq` of the newest session both histories know, else the
    /// beginning.
    static func start(source: JSONValue?, target: JSONValue?) -> (sequence: JSONValue, history: [JSONValue]) {
        guard let source, let target else { return (0, []) }
        if let session = source["session_id"], session == target["session_id"] {
            return (source["source_last_seq"] ?? 0, history(source))
        }
        return compare(history(source)[...], history(target)[...])
    }

    private static func history(_ log: JSONValue) -> [JSONValue] {
        if case .array(let entries)? = log["history"] { return entries }
        return []
    }

    private static func compare(_ source: ArraySlice<JSONValue>, _ target: ArraySlice<JSONValue>) -> (sequence: JSONValue, history: [JSONValue]) {
        var source = source, target = target
        while let s = source.first, let t = target.first {
            let sourceRest = source.dropFirst()
            if let id = s["session_id"], target.contains(where: { $0["session_id"] == id }) {
                return (s["recorded_seq"] ?? 0, Array(sourceRest))
            }
            let targetRest = target.dropFirst()
            if let id = t["session_id"], sourceRest.contains(where: { $0["session_id"] == id }) {
                return (t["recorded_seq"] ?? 0, Array(targetRest))
            }
            source = sourceRest
            target = targetRest
        }
        return (0, [])
    }

    /// The log to write: this session at `sequence`, its statistics, and the
    /// history before it (`do_checkpoint`).
    static func log(id: String, revision: String?, session: String, startSequence: JSONValue, sequence: JSONValue,
                    startTime: Date, statistics: ReplicationStatus, history: [JSONValue], documentIDs: Bool) -> JSONValue {
        let start = JSONValue.string(rfc1123(startTime)), end = JSONValue.string(rfc1123(Date()))
        // As CouchDB's, the counts go on from the history's newest entry (`max_stats`).
        func count(_ key: String, _ value: Int) -> JSONValue {
            if case .number(let before, _)? = history.first?[key], before >= 0, before < 1e15 { return .number(before + Double(value)) }
            return .number(Double(value))
        }
        let entry: JSONValue = [
            "session_id": .string(session), "start_time": start, "end_time": end,
            "start_last_seq": startSequence, "end_last_seq": sequence, "recorded_seq": sequence,
            "missing_checked": count("missing_checked", statistics.missingChecked),
            "missing_found": count("missing_found", statistics.missingFound),
            "docs_read": count("docs_read", statistics.docsRead), "docs_written": count("docs_written", statistics.docsWritten),
            "doc_write_failures": count("doc_write_failures", statistics.docWriteFailures),
            "bulk_get_docs": count("bulk_get_docs", statistics.docsRead), "bulk_get_attempts": count("bulk_get_attempts", statistics.docsRead),
        ]
        var members: [(key: String, value: JSONValue)] = [("_id", .string(id))]
        if let revision { members.append(("_rev", .string(revision))) }
        members += [("session_id", .string(session)), ("source_last_seq", sequence), ("replication_id_version", 4)]
        if documentIDs {
            members += [("start_time", start), ("end_time", end), ("docs_read", .number(Double(statistics.docsRead))),
                        ("docs_written", .number(Double(statistics.docsWritten))),
                        ("doc_write_failures", .number(Double(statistics.docWriteFailures)))]
        }
        members.append(("history", .array(Array(([entry] + history).prefix(historyLimit)))))
        return .object(members)
    }

    /// A date as HTTP writes it: `Sun, 29 Nov 2026 12:00:00 GMT`.
    static func rfc1123(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
