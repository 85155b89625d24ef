import SetteeCore
import SetteeViews

/// The map of an array index: one row per element of the arrays at the
/// index's path, keyed by the values of its expressions on the element in
/// order (`[element]` without expressions), valued by the element's position
/// among the document's elements at that path. An element lacking one of the
/// expressions has no row, as a document lacking a field has none in a JSON
/// index. Without expressions, a value at the path's end that is no array has
/// a row too, valued `null` (no element), because Mango's `$in` matches it.
///
/// Only the member holding the outermost array is parsed, never the whole document.
struct ArrayIndexer: Indexer {
    let name: String
    let version = ""
    let reduce: ReduceFunction? = .count
    let path: ArrayPath
    let expressions: [FieldPath]
    let partialFilter: MangoSelector?

    init(_ index: MangoIndex) throws(MangoError) {
        guard let arrayPath = index.arrayPath else { throw MangoError(error: "invalid_index", reason: "\(index.name) is not an array index") }
        name = index.name
        path = try ArrayPath(arrayPath)
        var expressions: [FieldPath] = []
        for field in index.fields { expressions.append(try FieldPath(field.field)) }
        self.expressions = expressions
        partialFilter = try index.partialFilterSelector.map { selector throws(MangoError) in try MangoSelector(selector) }
    }

    func map(_ document: IndexedDocument, _ emit: Emitter) throws {
        let root: JSONValue? = try document.withJSONBytes { json in
            if let partialFilter, try !partialFilter.matches(json: json) { return nil }
            guard case .found(let range) = try JSONMemberLocator.locate(path.root.utf8Parts, in: json) else { return nil }
            return try JSONParser.parse(UnsafeRawBufferPointer(rebasing: json[range]))
        }
        guard let root else { return }
        let values = path.values(in: root, fromRoot: true)
        for (position, element) in values.elements.enumerated() {
            if expressions.isEmpty {
                emit(.array([element]), .number(Double(position)))
                continue
            }
            var key: [JSONValue] = []
            key.reserveCapacity(expressions.count)
            for expression in expressions {
                guard case .found(let value) = expression.lookup(in: element) else { break }
                key.append(value)
            }
            if key.count == expressions.count { emit(.array(key), .number(Double(position))) }
        }
        if expressions.isEmpty {
            for other in values.others { emit(.array([other]), .null) }
        }
    }
}
