import Foundation
public import SetteeCore

/// A `find` query: CouchDB's `_find` request body.
///
/// ```swift
/// let request = try FindRequest(json: #"{"selector": {"type": "book", "year": {"$gt": 1960}}, "limit": 10}"#)
/// let result = try db.find(request)
/// ```
///
/// or, from Swift:
///
/// ```swift
/// var request = FindRequest(selector: ["type": "book"])
/// request.fields = ["title", "year"]
/// request.sort = [.init("_id", descending: true)]
/// ```
public struct FindRequest: Sendable {
    /// The selector documents must match.
    public var selector: JSONValue
    /// The most documents returned; CouchDB's default is 25.
    public var limit: Int = 25
    /// Matching documents to skip before the first returned.
    public var skip: Int = 0
    /// The order of the results; all fields in one direction.
    public var sort: [SortField] = []
    /// The fields to return (dotted paths); empty for whole documents.
    public var fields: [String] = []
    /// An index to use: `[ddoc]` or `[ddoc, name]`; empty to let the planner choose.
    public var useIndex: [String] = []
    /// Where the previous page ended (its result's ``FindResult/bookmark``).
    public var bookmark: String?
    /// Whether to include each document's `_conflicts` (its live losing
    /// leaves, see `Database.revisions(of:)`); the selector may match on it.
    public var conflicts = false
    /// Whether to bring the index up to date before reading it.
    public var update = true
    /// CouchDB's `stable` (one replica's answer); accepted, a single database always is.
    public var stable = false
    /// CouchDB's `stale: "ok"`: the index is read as it is, not brought up
    /// to date first, whatever ``update`` says (and the answer is stable).
    public var stale = false
    /// CouchDB's `r`, the read quorum of a clustered database: above 1,
    /// CouchDB reads each document apart from the index (a quorum read), and
    /// ``FindResult/ExecutionStats/totalQuorumDocsExamined`` counts the
    /// documents examined. A single database has one copy: the documents
    /// read are the same.
    public var r = 1
    /// Whether the result carries ``FindResult/executionStats``.
    public var executionStats = false
    /// Whether the planner may fall back to another index, or a full scan,
    /// when `useIndex` names no index usable for the query.
    public var allowFallback = true
    /// In a partitioned database, the partition whose documents are searched
    /// (CouchDB's `/db/_partition/{partition}/_find`), with its partitioned
    /// indexes; nil to search the whole database with its global indexes.
    public var partition: String?

    /// A sort field: a dotted path and its direction.
    public struct SortField: Sendable, Equatable {
        /// The field's path.
        public var field: String
        /// Whether the order is descending.
        public var descending: Bool

        /// A sort field.
        public init(_ field: String, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    /// A request with a selector and CouchDB's defaults.
    public init(selector: JSONValue) {
        self.selector = selector
    }

    /// The request given as `_find`'s JSON body.
    /// - Throws: ``MangoError`` as CouchDB words it, or a JSON parse error.
    public init(json: String) throws {
        let value = try JSONValue(parsing: json)
        try Self.refuseIntegersWrittenAsFloats(jsonText: Array(json.utf8))
        try self.init(json: value)
    }

    /// The request given as `_find`'s body, checked as CouchDB checks it
    /// (`mango_opts:validate_find/1`): unknown members, values of the wrong
    /// type, a bad sort, fields or index name are refused.
    public init(json body: JSONValue) throws(MangoError) {
        guard case .object(let members) = body else { throw MangoError(error: "invalid_ejson", reason: "Invalid JSON value: \(MangoError.erlang(body))") }
        var selector: JSONValue?
        var request = FindRequest(selector: [:])
        for (key, value) in members {
            switch key {
            case "selector":
                guard case .object = value else { throw .invalidSelectorJSON(value) }
                selector = value
            case "use_index": request.useIndex = try Self.indexName(value)
            case "bookmark":
                switch value {
                case .null: request.bookmark = nil
                case .string(let text): request.bookmark = text.isEmpty ? nil : text
                default: throw MangoError(error: "invalid_bookmark", reason: "Invalid bookmark value: \(value.jsonText)")
                }
            case "limit": request.limit = try Self.nonNegativeInteger(value)
            case "skip": request.skip = try Self.nonNegativeInteger(value)
            case "sort": request.sort = try Self.sortFields(value)
            case "fields": request.fields = try Self.fieldList(value)
            case "partition": request.partition = try PartitionScope.partition(value)
            case "r":
                guard let r = SelectorNormalization.integer(value), r > 0 else {
                    throw MangoError(error: "invalid_pos_integer", reason: "\(MangoError.erlang(value)) is not an integer greater than zero")
                }
                request.r = r
            case "conflicts": request.conflicts = try Self.boolean(value)
            case "stale":
                guard value == .bool(false) || value == .string("ok") || value == .string("false") else {
                    throw MangoError(error: "invalid_ok_or_false_value", reason: "Invalid value for stale: \(MangoError.erlang(value))")
                }
                request.stale = value == .string("ok")
            case "update": request.update = try Self.boolean(value)
            case "stable": request.stable = try Self.boolean(value)
            case "execution_stats": request.executionStats = try Self.boolean(value)
            case "allow_fallback": request.allowFallback = try Self.boolean(value)
            default:
                throw MangoError(error: "invalid_key", reason: "Invalid key \(key) for this request.")
            }
        }
        guard let selector else { throw MangoError(error: "missing_required_key", reason: "Missing required key: selector") }
        request.selector = selector
        self = request
    }

    /// Whether the index is brought up to date before it is read
    /// (`mango_cursor_view:apply_opts/2`: `stale: "ok"` means not).
    package var updatesIndex: Bool { update && !stale }

    /// Whether the view is read as `stable` (`stale: "ok"` implies it).
    package var readsStable: Bool { stable || stale }

    private static func boolean(_ value: JSONValue) throws(MangoError) -> Bool {
        guard case .bool(let flag) = value else {
            throw MangoError(error: "invalid_boolean", reason: "Invalid boolean value: \(MangoError.erlang(value))")
        }
        return flag
    }

    private static func nonNegativeInteger(_ value: JSONValue) throws(MangoError) -> Int {
        guard let integer = SelectorNormalization.integer(value), integer >= 0 else {
            throw MangoError(error: "invalid_non_neg_integer", reason: "\(MangoError.erlang(value)) is not an integer greater than or equal to zero")
        }
        return integer
    }

    /// `mango_opts:validate_use_index/1`.
    private static func indexName(_ value: JSONValue) throws(MangoError) -> [String] {
        func invalid() -> MangoError { MangoError(error: "invalid_index_name", reason: "Invalid index name: \(MangoError.erlang(value))") }
        switch value {
        case .null: return []
        case .string(let name):
            let parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            switch parts.count {
            case 1: return parts
            case 2: return parts[0] == "_design" ? [parts[1]] : parts
            case 3 where parts[0] == "_design": return [parts[1], parts[2]]
            default: throw invalid()
            }
        case .array(let elements):
            let names = elements.compactMap(\.stringValue)
            guard names.count == elements.count, names.count <= 2 else { throw invalid() }
            return names
        default:
            throw invalid()
        }
    }

    /// `mango_sort:new/1`.
    static func sortFields(_ value: JSONValue) throws(MangoError) -> [SortField] {
        guard case .array(let elements) = value else {
            throw MangoError(error: "invalid_sort_json", reason: "Sort must be an array of sort specs, not: \(erlangPrint(value))")
        }
        var fields: [SortField] = []
        for element in elements {
            switch element {
            case .string(let name) where !name.isEmpty:
                fields.append(SortField(name))
            case .object(let members) where members.count == 1 && (members[0].value == "asc" || members[0].value == "desc"):
                fields.append(SortField(members[0].key, descending: members[0].value == "desc"))
            default:
                throw MangoError(error: "invalid_sort_field", reason: "Invalid sort field: \(erlangPrint(element))")
            }
        }
        if Set(fields.map(\.descending)).count > 1 {
            throw MangoError(error: "unsupported_mixed_sort", reason: "Sorts currently only support a single direction for all fields.")
        }
        for field in fields { _ = try FieldPath(field.field) }
        return fields
    }

    /// `mango_fields:new/1`.
    private static func fieldList(_ value: JSONValue) throws(MangoError) -> [String] {
        guard case .array(let elements) = value else {
            throw MangoError(error: "invalid_fields", reason: "Fields must be an array of strings, not: \(MangoError.erlang(value))")
        }
        var fields: [String] = []
        for element in elements {
            guard case .string(let name) = element else {
                throw MangoError(error: "invalid_field", reason: "Invalid JSON for field spec: \(MangoError.erlang(element))")
            }
            _ = try FieldPath(name)
            fields.append(name)
        }
        return fields
    }

    /// A JSON value as Erlang's `~p` prints it.
    private static func erlangPrint(_ value: JSONValue) -> String {
        MangoError.erlangPrint(value)
    }
}
