import Foundation
import SetteeCore

/// What a `find` query returned: CouchDB's `_find` response.
public struct FindResult: Sendable {
    /// The matching documents (or, with ``FindRequest/fields``, the fields asked for), in order.
    public var documents: [JSONValue]
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
        /// Documents read with a quorum (CouchDB clusters only): always 0.
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

    /// The response body as CouchDB writes it: `docs`, `bookmark`, and
    /// `warning` and `execution_stats` when there are.
    public var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("docs", .array(documents)), ("bookmark", .string(bookmark))]
        if let warning { members.append(("warning", .string(warning))) }
        if let executionStats { members.append(("execution_stats", executionStats.json)) }
        return .object(members)
    }

    /// The documents decoded as `T`.
    public func decoded<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> [T] {
        try documents.map { try decoder.decode(T.self, from: Data($0.jsonText.utf8)) }
    }
}
