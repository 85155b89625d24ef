public import SetteeCore
import SetteeViews

/// A request to create a `find` index: CouchDB's `POST /db/_index` body,
/// `{"index": {"fields": [...], "partial_filter_selector": {...}}, "name": "...", "ddoc": "...", "type": "json"}`,
/// or, for an array index (Settee's, after Couchbase Lite's), `"type": "array"` and
/// `{"index": {"array": "contacts[].phones", "fields": ["type"]}, ...}`: the path of
/// the arrays and the expressions evaluated on each element (`fields`, optional).
public struct IndexRequest: Sendable, Equatable {
    /// The index it defines (its design document and name filled in).
    public var index: MangoIndex

    /// Reads and checks a request as CouchDB does (`mango_opts:validate_idx_create/1`,
    /// `mango_idx_view:validate_new/2`). Without `name` or `ddoc`, both are a
    /// hash of the definition, so the same request names the same index.
    public init(json body: JSONValue) throws(MangoError) {
        guard case .object(let members) = body else { throw MangoError(error: "invalid_ejson", reason: "Invalid JSON value: \(MangoError.erlang(body))") }
        var definition: JSONValue?
        var type = "json"
        var name: String?
        var designDocument: String?
        var partitioned: Bool?
        for (key, value) in members {
            switch key {
            case "index": definition = value
            case "type":
                guard case .string(let text) = value else { throw MangoError(error: "invalid_string", reason: "Invalid string: \(MangoError.erlang(value))") }
                type = text
            case "name": name = try Self.nonEmptyString(value)
            case "ddoc": designDocument = try Self.nonEmptyString(value)
            case "w":
                guard let w = SelectorNormalization.integer(value), w > 0 else {
                    throw MangoError(error: "invalid_pos_integer", reason: "\(MangoError.erlang(value)) is not an integer greater than zero")
                }
            case "partitioned":
                // mango_opts:validate_partitioned/1; without it, the database's default.
                guard case .bool(let flag) = value else {
                    throw MangoError(error: "invalid_partitioned_value", reason: "Invalid partitioned value: \(MangoError.erlang(value))")
                }
                partitioned = flag
            default:
                throw MangoError(error: "invalid_key", reason: "Invalid key \(key) for this request.")
            }
        }
        guard let definition else { throw MangoError(error: "missing_required_key", reason: "Missing required key: index") }
        var index: MangoIndex
        if type == "array" {
            index = try Self.arrayIndex(definition)
        } else {
            index = try Self.jsonIndex(type: type, definition)
        }
        let generated = SHA256.hexDigest(Array(index.view.canonicalized().jsonText.utf8)).prefix(40)
        index.name = name ?? String(generated)
        let design = designDocument ?? String(generated)
        index.designDocument = MangoIndex.designDocumentID(design)
        index.partitioned = partitioned
        self.index = index
    }

    private static func jsonIndex(type: String, _ definition: JSONValue) throws(MangoError) -> MangoIndex {
        guard type == "json" else {
            if type == "text" || type == "nouveau" {
                throw MangoError(status: 503, error: "required index service unavailable", reason: type)
            }
            throw MangoError(error: "invalid_index", reason: "Invalid type for index: \(type)")
        }
        guard case .object(let definitionMembers) = definition else {
            throw MangoError(error: "invalid_index", reason: "JSON indexes must be an object, not: \(MangoError.erlang(definition))")
        }
        var fields: [FindRequest.SortField]?
        var partial: JSONValue?
        for (key, value) in definitionMembers {
            switch key {
            case "fields": fields = try FindRequest.sortFields(value)
            case "partial_filter_selector":
                partial = try partialFilter(value)
            default:
                throw MangoError(error: "invalid_key", reason: "Invalid key \(key) for this request.")
            }
        }
        guard let fields else { throw MangoError(error: "missing_required_key", reason: "Missing required key: fields") }
        guard !fields.isEmpty else { throw MangoError(error: "invalid_index", reason: "Index is missing its definition.") }
        return MangoIndex(designDocument: nil, name: "", type: "json", fields: fields, partialFilterSelector: partial)
    }

    /// A `partial_filter_selector`, checked; nil when it is empty (every document).
    private static func partialFilter(_ value: JSONValue) throws(MangoError) -> JSONValue? {
        guard case .object = value else { throw .invalidSelectorJSON(value) }
        _ = try MangoSelector(value)
        return value == [:] ? nil : value
    }

    /// `{"array": PATH, "fields": [EXPRESSION, ...], "partial_filter_selector": {...}}`.
    private static func arrayIndex(_ definition: JSONValue) throws(MangoError) -> MangoIndex {
        guard case .object(let members) = definition else {
            throw MangoError(error: "invalid_index", reason: "Array indexes must be an object, not: \(MangoError.erlang(definition))")
        }
        var path: String?
        var expressions: [String] = []
        var partial: JSONValue?
        for (key, value) in members {
            switch key {
            case "array":
                guard case .string(let text) = value, !text.isEmpty else {
                    throw MangoError(error: "invalid_index", reason: "The array of an array index must be a path such as \"contacts[].phones\", not: \(MangoError.erlang(value))")
                }
                _ = try ArrayPath(text)
                path = text
            case "fields":
                guard case .array(let values) = value else {
                    throw MangoError(error: "invalid_index", reason: "The fields of an array index must be a list of field names, not: \(MangoError.erlang(value))")
                }
                for value in values {
                    guard case .string(let field) = value else {
                        throw MangoError(error: "invalid_index", reason: "An array index's fields are names, evaluated on each element, not: \(MangoError.erlang(value))")
                    }
                    _ = try FieldPath(field)
                    expressions.append(field)
                }
            case "partial_filter_selector":
                partial = try partialFilter(value)
            default:
                throw MangoError(error: "invalid_key", reason: "Invalid key \(key) for this request.")
            }
        }
        guard let path else { throw MangoError(error: "missing_required_key", reason: "Missing required key: array") }
        return .array(designDocument: nil, name: "", path: path, expressions: expressions, partialFilterSelector: partial)
    }

    /// A request given as JSON text.
    public init(json text: String) throws {
        try self.init(json: try JSONValue(parsing: text))
    }

    private static func nonEmptyString(_ value: JSONValue) throws(MangoError) -> String {
        guard case .string(let text) = value else { throw MangoError(error: "invalid_string", reason: "Invalid string: \(MangoError.erlang(value))") }
        guard !text.isEmpty else { throw MangoError(error: "invalid_empty_string", reason: "Index name or ddoc cannot be empty string") }
        return text
    }
}
