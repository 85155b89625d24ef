public import SetteeCore

extension UnnestRequest {
    /// The request as JSON, in `_find`'s terms:
    /// `{"path": "contacts[].phones", "element": {"type": "home"}, "selector": {"type": "person"},
    /// "limit": 10, "skip": 0, "bookmark": "...", "update": true}`.
    /// `path` is required; `element` (the element selector, as inside
    /// `$elemMatch`) and `selector` (the document's) default to `{}`; without
    /// `limit`, every matching element. `execution_stats` is allowed (what a
    /// command prints); `fields`, `sort` and `use_index` are not.
    /// - Throws: ``MangoError`` as `find` words it (`missing_required_key`,
    ///   `invalid_key`, `invalid_non_neg_integer`, `bad_arg` for a `$mod` of
    ///   floats…), or a JSON parse error.
    public init(json: String) throws {
        let value = try JSONValue(parsing: json)
        try FindRequest.refuseIntegersWrittenAsFloats(jsonText: Array(json.utf8), selectorKeys: ["selector", "element"])
        try self.init(json: value)
    }

    /// The request given as a JSON object (see ``init(json:)-(String)``).
    public init(json body: JSONValue) throws(MangoError) {
        guard case .object(let members) = body else {
            throw MangoError(error: "invalid_ejson", reason: "Invalid JSON value: \(MangoError.erlang(body))")
        }
        var path: String?
        var element: JSONValue = [:]
        // What `_find` says the same way, checked as `_find` checks it.
        var shared: [(key: String, value: JSONValue)] = []
        for (key, value) in members {
            switch key {
            case "path":
                guard case .string(let text) = value else {
                    throw MangoError(error: "invalid_field_name", reason: "Invalid field name: \(MangoError.erlang(value))")
                }
                path = text
            case "element":
                guard case .object = value else { throw .invalidSelectorJSON(value) }
                element = value
            case "selector", "limit", "skip", "bookmark", "update", "execution_stats":
                shared.append((key, value))
            default:
                throw MangoError(error: "invalid_key", reason: "Invalid key \(key) for this request.")
            }
        }
        guard let path else { throw MangoError(error: "missing_required_key", reason: "Missing required key: path") }
        if !shared.contains(where: { $0.key == "selector" }) { shared.append(("selector", [:])) }
        let find = try FindRequest(json: .object(shared))
        self.init(path: path, elementSelector: element, parentSelector: find.selector,
                  limit: shared.contains { $0.key == "limit" } ? find.limit : nil)
        skip = find.skip
        bookmark = find.bookmark
        update = find.update
    }
}

extension UnnestResult {
    /// The result as JSON: `{"elements": [{"id", "position", "element", "doc"}, …],
    /// "bookmark": "...", "index": {...}}`, and `execution_stats` when
    /// `executionStats` (as `find` writes them).
    public func json(executionStats: Bool = false) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("elements", .array(elements.map { element in
                ["id": .string(element.documentID), "position": .number(Double(element.position)),
                 "element": element.element, "doc": element.document]
            })),
            ("bookmark", .string(bookmark)),
            ("index", index.json),
        ]
        if executionStats { members.append(("execution_stats", self.executionStats.json)) }
        return .object(members)
    }
}
