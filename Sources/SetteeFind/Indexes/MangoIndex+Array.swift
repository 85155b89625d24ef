package import SetteeCore

extension MangoIndex {
    /// An array index on `path` (see ``ArrayPath``), keyed by `expressions` on each element.
    package static func array(designDocument: String?, name: String, path: String, expressions: [String],
                              partialFilterSelector: JSONValue? = nil) -> MangoIndex {
        MangoIndex(designDocument: designDocument, name: name, type: "array", fields: expressions.map { FindRequest.SortField($0) },
                   partialFilterSelector: partialFilterSelector, arrayPath: path)
    }

    /// The design document's view of an array index: `map` holds what decides
    /// its rows (and so its version): the path, the expressions, the partial
    /// filter, and, for CouchDB's eyes, `fields` naming the path's first field.
    func arrayView(_ path: String) -> JSONValue {
        let root = (try? ArrayPath(path))?.root.name ?? path
        let map: JSONValue = .object([
            ("fields", .object([(key: root, value: JSONValue.string("asc"))])),
            ("partial_filter_selector", partialFilterSelector ?? [:]),
            ("array", .string(path)),
            ("expressions", .array(fields.map { .string($0.field) })),
        ])
        var definition: [(key: String, value: JSONValue)] = [
            ("array", .string(path)),
            ("fields", .array(fields.map { .string($0.field) })),
        ]
        if let partialFilterSelector, partialFilterSelector != [:] {
            definition.append(("partial_filter_selector", partialFilterSelector))
        }
        return ["map": map, "reduce": "_count", "options": ["def": .object(definition)]]
    }

    /// The array index a query design document's view defines, or nil when
    /// its `map` does not read as one (a bad path or expression, a bad filter).
    static func arrayIndex(designDocument: String, name: String, view: JSONValue) -> MangoIndex? {
        guard let map = view["map"], case .string(let path)? = map["array"], (try? ArrayPath(path)) != nil else { return nil }
        var expressions: [String] = []
        switch map["expressions"] {
        case nil, .null?: break
        case .array(let values)?:
            for value in values {
                guard case .string(let field) = value, (try? FieldPath(field)) != nil else { return nil }
                expressions.append(field)
            }
        default: return nil
        }
        var partial = map["partial_filter_selector"]
        if partial == [:] || partial == .null { partial = nil }
        if let partial, (try? MangoSelector(partial)) == nil { return nil }
        return .array(designDocument: designDocument, name: name, path: path, expressions: expressions, partialFilterSelector: partial)
    }
}
