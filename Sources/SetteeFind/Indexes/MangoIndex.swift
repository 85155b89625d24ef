public import SetteeCore

/// A `find` index: CouchDB's Mango JSON index (the document's values at some
/// fields, in order, as one key), an array index (Couchbase Lite's: one key
/// per element of the arrays at a path), or `_all_docs`, CouchDB's "special"
/// index that every database has.
///
/// A JSON index lives in a design document with `"language": "query"`, in
/// the shape CouchDB stores it, so that the same design document defines the
/// same index in CouchDB:
///
/// ```json
/// {"_id": "_design/by-type", "language": "query",
///  "views": {"type-name": {"map": {"fields": {"type": "asc", "name": "asc"}, "partial_filter_selector": {}},
///                          "reduce": "_count", "options": {"def": {"fields": ["type", "name"]}}}}}
/// ```
///
/// An array index lives in the same kind of design document; its `map` names
/// the array's path and the expressions (``arrayPath``, ``fields``), and its
/// `fields` are the path's first field, so that CouchDB, which knows no array
/// index, reads the view as a JSON index on that field (harmless there):
///
/// ```json
/// {"_id": "_design/phones", "language": "query",
///  "views": {"phones": {"map": {"fields": {"contacts": "asc"}, "partial_filter_selector": {},
///                               "array": "contacts[].phones", "expressions": ["type"]},
///                       "reduce": "_count", "options": {"def": {"array": "contacts[].phones", "fields": ["type"]}}}}}
/// ```
public struct MangoIndex: Sendable, Equatable {
    /// The design document holding it (`_design/…`); nil for `_all_docs`.
    public var designDocument: String?
    /// Its name: the view's name in its design document, or `_all_docs`.
    public var name: String
    /// `json`, `array` for an array index, or `special` for `_all_docs`.
    public var type: String
    /// The indexed fields, in key order, each with its direction; for an
    /// array index, the expressions evaluated on each element (none: the element itself).
    public var fields: [FindRequest.SortField]
    /// Only documents matching this selector are indexed (CouchDB's partial index); nil for all.
    public var partialFilterSelector: JSONValue?
    /// For an array index, the path of its arrays (`tags`, `contacts[].phones`: see ``ArrayIndex``); nil otherwise.
    public var arrayPath: String? = nil
    /// Whether the index serves partition queries only (CouchDB's partitioned
    /// index) rather than global ones: the design document's `options.partitioned`;
    /// nil when it says nothing, which means the database's own (partitioned in a
    /// partitioned database, as `Database.listIndexes()` lists it).
    public var partitioned: Bool? = nil

    /// A design document's id from its name or id (`books` or `_design/books`).
    package static func designDocumentID(_ nameOrID: String) -> String {
        nameOrID.hasPrefix("_design/") ? nameOrID : "_design/" + nameOrID
    }

    /// A design document's name from its id or name, as CouchDB's messages print it.
    package static func designDocumentName(_ idOrName: String) -> String {
        idOrName.hasPrefix("_design/") ? String(idOrName.dropFirst("_design/".count)) : idOrName
    }

    /// `_all_docs`.
    public static let allDocuments = MangoIndex(designDocument: nil, name: "_all_docs", type: "special",
                                                fields: [FindRequest.SortField("_id")], partialFilterSelector: nil)

    /// The index as CouchDB lists it (`GET /db/_index`) and `explain` shows it.
    public var json: JSONValue {
        var definition: [(key: String, value: JSONValue)] = []
        if let arrayPath { definition.append(("array", .string(arrayPath))) }
        definition += [
            ("fields", .array(fields.map { .object([($0.field, .string($0.descending ? "desc" : "asc"))]) })),
        ]
        if let partialFilterSelector, partialFilterSelector != [:] {
            definition.append(("partial_filter_selector", partialFilterSelector))
        }
        var members: [(key: String, value: JSONValue)] = [
            ("ddoc", designDocument.map(JSONValue.string) ?? .null),
            ("name", .string(name)),
            ("type", .string(type)),
        ]
        if type != "special" { members.append(("partitioned", .bool(partitioned ?? false))) }
        members.append(("def", .object(definition)))
        return .object(members)
    }

    /// The design document's view that stores this index, as CouchDB writes
    /// it (`mango_idx_view:make_view/1`): `map` holds the fields and the
    /// partial filter, `reduce` is `_count`, `options.def` the definition as requested.
    package var view: JSONValue {
        if let arrayPath { return arrayView(arrayPath) }
        var map: [(key: String, value: JSONValue)] = [
            ("fields", .object(fields.map { ($0.field, .string($0.descending ? "desc" : "asc")) })),
        ]
        map.append(("partial_filter_selector", partialFilterSelector ?? [:]))
        var definition: [(key: String, value: JSONValue)] = [
            ("fields", .array(fields.map { $0.descending ? JSONValue.object([($0.field, JSONValue.string("desc"))]) : JSONValue.string($0.field) })),
        ]
        if let partialFilterSelector, partialFilterSelector != [:] {
            definition.append(("partial_filter_selector", partialFilterSelector))
        }
        return ["map": .object(map), "reduce": "_count", "options": ["def": .object(definition)]]
    }

    /// The JSON indexes a `"language": "query"` design document holds
    /// (`mango_idx_view:from_ddoc/1`): views whose definition does not read
    /// as an index are left out, as CouchDB leaves them out.
    package static func indexes(inDesignDocument document: JSONValue) -> [MangoIndex] {
        guard document["language"]?.stringValue == "query", case .string(let id)? = document["_id"],
              case .object(let views)? = document["views"] else { return [] }
        return views.compactMap { name, view in
            if view["map"]?["array"] != nil { return arrayIndex(designDocument: id, name: name, view: view) }
            guard case .object(let fields)? = view["map"]?["fields"], !fields.isEmpty else { return nil }
            var sortFields: [FindRequest.SortField] = []
            for (field, direction) in fields {
                guard direction == "asc" || direction == "desc", (try? FieldPath(field)) != nil else { return nil }
                sortFields.append(FindRequest.SortField(field, descending: direction == "desc"))
            }
            var partial = view["map"]?["partial_filter_selector"]
            if partial == [:] || partial == .null { partial = nil }
            if let partial, (try? MangoSelector(partial)) == nil { return nil }
            return MangoIndex(designDocument: id, name: name, type: "json", fields: sortFields, partialFilterSelector: partial)
        }.map { index in
            var index = index
            index.partitioned = document["options"]?["partitioned"]?.boolValue
            return index
        }
    }
}
