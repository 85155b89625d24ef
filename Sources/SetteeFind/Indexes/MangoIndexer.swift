import SetteeCore
import SetteeViews

/// The map of a JSON index, as CouchDB's `mango_native_proc` indexes a
/// document: when the document matches the index's partial filter and has
/// every indexed field, one row whose key is the fields' values in order
/// (value `null`); otherwise none. Only the indexed fields are parsed.
struct MangoIndexer: Indexer {
    let name: String
    let version = ""
    let reduce: ReduceFunction? = .count
    let paths: [[[UInt8]]]
    let partialFilter: MangoSelector?

    init(_ index: MangoIndex) throws(MangoError) {
        name = index.name
        var paths: [[[UInt8]]] = []
        for field in index.fields { paths.append(try FieldPath(field.field).utf8Parts) }
        self.paths = paths
        partialFilter = try index.partialFilterSelector.map { selector throws(MangoError) in try MangoSelector(selector) }
    }

    func map(_ document: IndexedDocument, _ emit: Emitter) throws {
        let key: [JSONValue]? = try document.withJSONBytes { json in
            if let partialFilter, try !partialFilter.matches(json: json) { return nil }
            var values: [JSONValue] = []
            values.reserveCapacity(paths.count)
            for path in paths {
                guard case .found(let range) = try JSONMemberLocator.locate(path, in: json) else { return nil }
                values.append(try JSONParser.parse(UnsafeRawBufferPointer(rebasing: json[range])))
            }
            return values
        }
        if let key { emit(.array(key)) }
    }
}

extension MangoIndex {
    /// The view that keeps this index, mapped in Swift; nil for `_all_docs`
    /// or a definition that does not read as an index.
    var viewDefinition: ViewDefinition? {
        guard let designDocument else { return nil }
        if type == "array" {
            guard let indexer = try? ArrayIndexer(self) else { return nil }
            return ViewDefinition(designDocument: designDocument, name: name, queryIndexer: indexer, definition: view["map"] ?? .null,
                                  partitioned: partitioned == true)
        }
        guard type == "json", let indexer = try? MangoIndexer(self) else { return nil }
        return ViewDefinition(designDocument: designDocument, name: name, queryIndexer: indexer, definition: view["map"] ?? .null,
                              partitioned: partitioned == true)
    }

    /// The views of a `"language": "query"` design document: one per JSON
    /// index it defines, partitioned as ``partitioned`` says, else as the database is.
    package static func views(inDesignDocument document: JSONValue, id: String, databaseIsPartitioned: Bool) -> [ViewDefinition] {
        // A database that is not partitioned has no partitioned index.
        indexes(inDesignDocument: document).map { index in
            var index = index.resolvingPartitioned(default: databaseIsPartitioned)
            if !databaseIsPartitioned { index.partitioned = false }
            return index
        }.compactMap(\.viewDefinition)
    }
}
