import SetteeCore

/// `fields`: the members of a document a `find` returns
/// (`mango_fields:extract/2`): each field found is set at its path in a new
/// object, in the order the fields are listed; missing ones are left out.
struct FieldProjection: Sendable {
    let paths: [FieldPath]

    init(_ fields: [String]) throws(MangoError) {
        var paths: [FieldPath] = []
        for field in fields { paths.append(try FieldPath(field)) }
        self.paths = paths
    }

    /// The document as a result holds it: its text as it is, when whole;
    /// else the fields asked for, parsed from it.
    func extract(jsonText document: String) throws -> FoundDocument {
        guard !paths.isEmpty else { return FoundDocument(jsonText: document) }
        return FoundDocument(extract(try JSONParser.parse(document)))
    }

    func extract(_ document: JSONValue) -> JSONValue {
        guard !paths.isEmpty else { return document }
        var result: JSONValue = .object([])
        for path in paths {
            if case .found(let value) = path.lookup(in: document) {
                result = Self.set(value, at: path.parts[...], in: result)
            }
        }
        return result
    }

    /// `mango_doc:set_field/3`.
    static func set(_ value: JSONValue, at path: ArraySlice<String>, in target: JSONValue) -> JSONValue {
        guard let name = path.first else { return value }
        let rest = path.dropFirst()
        switch target {
        case .object(var members):
            if let index = members.firstIndex(where: { $0.key == name }) {
                members[index].value = rest.isEmpty ? value : set(value, at: rest, in: members[index].value)
            } else {
                members.append((name, rest.isEmpty ? value : nested(value, rest)))
            }
            return .object(members)
        case .array(var elements):
            guard let index = Int(name), index >= 0, index < elements.count else { return target }
            elements[index] = rest.isEmpty ? value : set(value, at: rest, in: elements[index])
            return .array(elements)
        default:
            return target
        }
    }

    private static func nested(_ value: JSONValue, _ path: ArraySlice<String>) -> JSONValue {
        guard let name = path.first else { return value }
        return .object([(name, nested(value, path.dropFirst()))])
    }
}
