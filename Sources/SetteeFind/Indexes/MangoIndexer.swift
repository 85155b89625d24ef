package import SetteeCore
package import SetteeViews

/// The map of a JSON index, as CouchDB's `mango_native_proc` indexes a
/// document: when the document matches the index's partial filter and has
/// every indexed field, one row whose key is the fields' values in order
/// (value `null`); otherwise none. Only the indexed fields are parsed, found
/// in the document's text: the map stage does not locate its members first.
struct MangoIndexer: RawJSONIndexer {
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
        try document.withJSONBytes { json in
            if let partialFilter, try !partialFilter.matches(json: json) { return }
            try emit.emit { key in
                key.append(UInt8(ascii: "["))
                for (position, path) in paths.enumerated() {
                    // A stored document is valid JSON: the members before the field are passed unvalidated.
                    guard case .found(let range) = try JSONMemberLocator.locate(path, in: json, assumingValid: true) else { return false }
                    if position > 0 { key.append(UInt8(ascii: ",")) }
                    let value = UnsafeRawBufferPointer(rebasing: json[range])
                    if Self.isWrittenAsJSONWriterWrites(value) {
                        key.append(contentsOf: value)
                    } else {
                        // Numbers as the document writes them (`1.0`, `9007199254740993`): a covering read returns them.
                        JSONWriter.write(try JSONParser.parse(value), into: &key, literals: true)
                    }
                }
                key.append(UInt8(ascii: "]"))
                return true
            }
        }
    }

    /// Whether the JSON text of a value is the text ``JSONWriter`` writes for
    /// it, so that it is copied rather than parsed and written again: a
    /// string of printable ASCII without escapes, an integer of at most 15
    /// digits (not `-0`), `true`, `false`, `null`.
    static func isWrittenAsJSONWriterWrites(_ text: UnsafeRawBufferPointer) -> Bool {
        guard let first = text.first else { return false }
        switch first {
        case UInt8(ascii: "\""):
            guard text.count >= 2, text[text.count - 1] == UInt8(ascii: "\"") else { return false }
            for byte in text[1..<(text.count - 1)] {
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { return false }
            }
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let digits = first == UInt8(ascii: "-") ? text.dropFirst() : text[...]
            guard let lead = digits.first, digits.count <= 15 else { return false }
            if lead == UInt8(ascii: "0") { return digits.count == 1 && first != UInt8(ascii: "-") }
            return digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            // A stored document is valid JSON: a value starting so is a literal.
            return true
        default:
            return false
        }
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
        return ViewDefinition(designDocument: designDocument, name: name, queryIndexer: indexer, definition: versionedMap,
                              partitioned: partitioned == true)
    }

    /// What versions a JSON index's rows: its view's `map`, whose `fields`
    /// member lists the columns in order. The version is a hash of it with
    /// object members sorted (``ViewDefinition``), which would make indexes
    /// of the same fields in other orders one index: the order of two
    /// columns or more is added as a member of its own. (Indexes of several
    /// fields versioned without it may hold the rows of another order: they
    /// are built again; an index of one field keeps its version.) Keys that
    /// write numbers as the documents do (`1.0`, integers past 2^53) are
    /// marked by a member too: indexes whose keys wrote them as doubles are
    /// built again.
    private var versionedMap: JSONValue {
        let map = view["map"] ?? .null
        guard case .object(var members) = map else { return map }
        if fields.count > 1 { members.append((key: "column_order", value: .array(fields.map { JSONValue.string($0.field) }))) }
        members.append((key: "key_numbers", value: .string("as written")))
        return .object(members)
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
