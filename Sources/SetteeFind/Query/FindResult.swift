public import Foundation
import Synchronization
public import SetteeCore

/// What a `find` query returned: CouchDB's `_find` response.
///
/// The documents are kept as the JSON text the database stores
/// (``found``): writing the response (``jsonText``, ``writeJSON(into:)``)
/// copies that text, and a document is parsed only when read as a value
/// (``documents``, ``FoundDocument/json``) or decoded
/// (``decoded(as:decoder:)``, ``FoundDocument/decoded(as:decoder:)``).
public struct FindResult: Sendable {
    /// The matching documents (or, with ``FindRequest/fields``, the fields
    /// asked for), in order, as JSON text.
    public var found: [FoundDocument] {
        didSet { parsed = ParsedDocuments() }
    }

    /// The matching documents (or, with ``FindRequest/fields``, the fields
    /// asked for), in order, parsed: on first use, then kept.
    public var documents: [JSONValue] {
        get { parsed.documents(of: found) }
        set { found = newValue.map(FoundDocument.init) }
    }

    /// ``documents`` once parsed; a new one whenever ``found`` changes.
    private var parsed = ParsedDocuments()

    /// Where this page ended: pass it as the next request's
    /// ``FindRequest/bookmark`` for the page after it. `"nil"` when nothing was returned.
    public var bookmark: String
    /// CouchDB's warnings, one per line: no index served the query, an
    /// index named by `use_index` was not used, many documents examined per result.
    public var warning: String?
    /// How much work the query took, when ``FindRequest/executionStats`` asked for it.
    public var executionStats: ExecutionStats?

    /// CouchDB's `execution_stats`.
    public struct ExecutionStats: Sendable, Equatable {
        /// Index entries read.
        public var totalKeysExamined = 0
        /// Documents read to match them against the selector.
        public var totalDocsExamined = 0
        /// Documents read apart from the index, as CouchDB reads them with a
        /// quorum when the request's ``FindRequest/r`` is above 1 (then
        /// ``totalDocsExamined`` is 0); 0 otherwise.
        public var totalQuorumDocsExamined = 0
        /// Documents returned.
        public var resultsReturned = 0
        /// The time the query took, in milliseconds.
        public var executionTimeMilliseconds = 0.0

        /// As CouchDB writes it.
        public var json: JSONValue {
            [
                "total_keys_examined": .number(Double(totalKeysExamined)),
                "total_docs_examined": .number(Double(totalDocsExamined)),
                "total_quorum_docs_examined": .number(Double(totalQuorumDocsExamined)),
                "results_returned": .number(Double(resultsReturned)),
                "execution_time_ms": .number(executionTimeMilliseconds),
            ]
        }
    }

    /// A result of these documents.
    public init(found: [FoundDocument], bookmark: String, warning: String? = nil, executionStats: ExecutionStats? = nil) {
        self.found = found
        self.bookmark = bookmark
        self.warning = warning
        self.executionStats = executionStats
    }

    /// A result of these documents.
    public init(documents: [JSONValue], bookmark: String, warning: String? = nil, executionStats: ExecutionStats? = nil) {
        self.init(found: documents.map(FoundDocument.init), bookmark: bookmark, warning: warning, executionStats: executionStats)
    }

    /// The response body as CouchDB writes it: `docs`, `bookmark`, and
    /// `warning` and `execution_stats` when there are. Parses every
    /// document: to write the response, ``jsonText`` or ``writeJSON(into:)``
    /// copy their text instead.
    public var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("docs", .array(documents)), ("bookmark", .string(bookmark))]
        if let warning { members.append(("warning", .string(warning))) }
        if let executionStats { members.append(("execution_stats", executionStats.json)) }
        return .object(members)
    }

    /// The response body as CouchDB writes it (``json``, as compact text),
    /// each document's stored text copied into it.
    public var jsonText: String {
        var tail: [UInt8] = []
        writeTail(into: &tail)
        let head: StaticString = #"{"docs":["#
        var length = head.utf8CodeUnitCount + found.count + tail.count
        for document in found {
            guard let count = document.withTextUTF8({ $0.count }) else { return jsonText(ofValues: tail) }
            length += count
        }
        // The stored texts copied as they are: text already known to be UTF-8 is not checked again.
        return String(unsafeUninitializedCapacity: length) { buffer in
            var position = 0
            func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
                guard let base = bytes.baseAddress else { return }
                (buffer.baseAddress! + position).initialize(from: base, count: bytes.count)
                position += bytes.count
            }
            copy(UnsafeBufferPointer(start: head.utf8Start, count: head.utf8CodeUnitCount))
            for (index, document) in found.enumerated() {
                if index > 0 {
                    buffer[position] = UInt8(ascii: ",")
                    position += 1
                }
                document.withTextUTF8(copy)
            }
            tail.withUnsafeBufferPointer(copy)
            return position
        }
    }

    /// ``jsonText`` when some documents are values (made in Swift, or fields asked for), ending with `tail`.
    private func jsonText(ofValues tail: [UInt8]) -> String {
        var text = #"{"docs":["#
        text.reserveCapacity(found.reduce(64 + tail.count) { $0 + $1.utf8Count + 1 })
        for (position, document) in found.enumerated() {
            if position > 0 { text += "," }
            document.appendJSON(to: &text)
        }
        text += String(decoding: tail, as: UTF8.self)
        return text
    }

    /// Appends the response body (see ``jsonText``) to `out`: what a server
    /// writes for `_find`.
    public func writeJSON(into out: inout [UInt8]) {
        out.reserveCapacity(out.count + found.reduce(64) { $0 + $1.utf8Count })
        out.append(contentsOf: #"{"docs":["#.utf8)
        for (position, document) in found.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            document.writeJSON(into: &out)
        }
        writeTail(into: &out)
    }

    /// What follows the documents: the bookmark, warning and statistics, and the closing brace.
    private func writeTail(into out: inout [UInt8]) {
        out.append(contentsOf: #"],"bookmark":"#.utf8)
        JSONWriter.writeString(bookmark, into: &out)
        if let warning {
            out.append(contentsOf: #","warning":"#.utf8)
            JSONWriter.writeString(warning, into: &out)
        }
        if let executionStats {
            out.append(contentsOf: #","execution_stats":"#.utf8)
            JSONWriter.write(executionStats.json, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The documents decoded as `T`, each from its text.
    public func decoded<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> [T] {
        try found.map { try $0.decoded(as: T.self, decoder: decoder) }
    }

    /// Whether `other` holds the same documents (byte for byte), bookmark
    /// and warning; the execution statistics are not compared.
    package func hasSameAnswer(as other: FindResult) -> Bool {
        found == other.found && bookmark == other.bookmark && warning == other.warning
    }
}

/// The documents of a result parsed once, on first use, shared by the
/// result's copies (a value type's lazily filled cache).
private final class ParsedDocuments: Sendable {
    private let documents = Mutex<[JSONValue]?>(nil)

    func documents(of found: [FoundDocument]) -> [JSONValue] {
        if let parsed = documents.withLock({ $0 }) { return parsed }
        // Parsed outside the lock; two threads racing here parse the same text alike.
        let parsed = found.map(\.json)
        documents.withLock { if $0 == nil { $0 = parsed } }
        return parsed
    }
}
