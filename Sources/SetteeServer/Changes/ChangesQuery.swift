import Foundation
import HTTPTypes
import Settee

/// A `/{db}/_changes` request's parameters, read as CouchDB's
/// `chttpd_db:parse_changes_query` reads them: in order, the last one of a
/// name winning, unknown ones ignored.
struct ChangesQuery: Sendable {
    /// How the response is sent.
    enum Feed: String, Sendable {
        /// One JSON object, at once.
        case normal
        /// One JSON object, once there is at least one change.
        case longpoll
        /// One JSON line per change, until the limit, the timeout or the client goes.
        case continuous
        /// Server-sent events (`data:`/`id:`), until the limit, the timeout or the client goes.
        case eventsource
    }

    /// Where the feed starts.
    enum Since: Sendable, Equatable {
        case sequence(UInt64)
        /// After the database's update sequence when the request arrives.
        case now
    }

    var feed = Feed.normal
    var since = Since.sequence(0)
    /// CouchDB's default is 10^15: no limit.
    var limit = 1_000_000_000_000_000
    var descending = false
    var includeDocs = false
    var attachments = false
    /// `conflicts=true`: with `include_docs`, each document's `_conflicts`.
    var conflicts = false
    /// `style=all_docs`: every leaf revision (Settee keeps one).
    var allDocsStyle = false
    /// Milliseconds between newlines sent while waiting; nil: no heartbeat.
    var heartbeat: Int?
    /// Milliseconds to wait for a change without heartbeat.
    var timeout: Int?
    /// Only every `seqInterval`-th row carries its `seq` (the others `null`).
    var seqInterval: Int?
    /// `filter`: empty for none.
    var filter = ""

    /// CouchDB's `changes_timeout` (60 s): the longest wait.
    static let defaultTimeout = 60_000

    init(_ request: CouchRequest) throws(CouchError) {
        for (name, value) in request.parameters {
            switch (name.lowercased(), value) {
            case ("feed", "live"):
                feed = .continuous
            case ("feed", _):
                guard let feed = Feed(rawValue: value) else {
                    throw CouchError.badRequest("Supported `feed` types: normal, continuous, live, longpoll, eventsource")
                }
                self.feed = feed
            case ("descending", "true"):
                descending = true
            case ("since", _), ("last-event-id", _):
                since = try Self.since(value)
            case ("limit", _):
                guard let limit = Int(value), limit >= 0 else {
                    throw CouchError(.badRequest, "query_parse_error", "Invalid value for integer: \"\(value)\"")
                }
                self.limit = limit
            case ("style", "all_docs"):
                allDocsStyle = true
            case ("style", "main_only"):
                allDocsStyle = false
            case ("style", _):
                throw CouchError.badRequest("Invalid style: \"\(value)\"; use main_only or all_docs")
            case ("heartbeat", "true"):
                heartbeat = Self.defaultTimeout
            case ("heartbeat", _):
                guard let milliseconds = Int(value) else {
                    throw CouchError.badRequest("Invalid heartbeat value. Expecting a positive integer value (in milliseconds).")
                }
                guard milliseconds > 0 else {
                    throw CouchError.badRequest("The heartbeat value should be a positive integer (in milliseconds).")
                }
                heartbeat = milliseconds
            case ("timeout", _):
                guard let milliseconds = Int(value), milliseconds >= 0 else {
                    throw CouchError(.badRequest, "query_parse_error", "Invalid value for integer: \"\(value)\"")
                }
                timeout = milliseconds
            case ("include_docs", "true"):
                includeDocs = true
            case ("attachments", "true"):
                attachments = true
            case ("conflicts", "true"):
                conflicts = true
            case ("filter", _):
                filter = value
            case ("seq_interval", _):
                guard let interval = Int(value), interval > 0 else { throw CouchError.badRequest("invalid_seq_interval") }
                seqInterval = interval
            default:
                continue
            }
        }
        // A browser reconnecting to an event stream says where it was.
        if feed == .eventsource, let last = request.header(HTTPField.Name("Last-Event-ID")!) {
            since = try Self.since(last)
        }
    }

    /// `since`: a number, `now`, or a CouchDB sequence (`"5-g1AAAA…"`, quoted
    /// or not) read by its number.
    static func since(_ text: String) throws(CouchError) -> Since {
        if text == "now" { return .now }
        var text = Substring(text)
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        let number = text.prefix { $0 != "-" }
        guard !number.isEmpty, number.allSatisfy(\.isASCII), let sequence = UInt64(number),
              number.count == text.count || text.count > number.count + 1 else {
            throw CouchError.badRequest("Malformed sequence supplied in 'since' parameter.")
        }
        return .sequence(sequence)
    }

    /// How long one wait for a change lasts before a heartbeat or the end.
    var waitMilliseconds: Int {
        if let heartbeat { return min(Self.defaultTimeout, heartbeat) }
        return min(Self.defaultTimeout, timeout ?? Self.defaultTimeout)
    }
}
