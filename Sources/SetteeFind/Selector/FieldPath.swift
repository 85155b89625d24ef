package import SetteeCore
import Foundation

/// A Mango field name split into its path: `a.b` is member `b` of member `a`,
/// `a\.b` the member named `a.b` (CouchDB's `mango_util:parse_field/1`). A
/// part that is an integer also indexes into an array.
package struct FieldPath: Sendable, Hashable {
    /// The field name as written.
    package let name: String
    /// Its parts, escapes removed.
    package let parts: [String]
    /// The parts' UTF-8, for finding the value in JSON text.
    package var utf8Parts: [[UInt8]] { parts.map { Array($0.utf8) } }

    /// Splits `name`; an empty part (`a..b`, a leading or trailing dot) is an error.
    package init(_ name: String) throws(MangoError) {
        self.name = name
        // On the UTF-8: Foundation's `contains` and a split on characters showed in the profile of every `find`.
        if !name.utf8.contains(UInt8(ascii: "\\")) {
            let parts = name.utf8.contains(UInt8(ascii: "."))
                ? name.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
                : [name]
            if parts.contains(where: \.isEmpty) { throw .invalidFieldName(name) }
            self.parts = parts
            isID = name == "_id"
            return
        }
        // Split on dots not preceded by a backslash, then drop every backslash.
        var parts: [String] = []
        var current = ""
        var previous: Character?
        for character in name {
            if character == ".", previous != "\\" {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
            previous = character
        }
        parts.append(current)
        if parts.contains("") { throw .invalidFieldName(name) }
        self.parts = parts.map { $0.replacingOccurrences(of: "\\", with: "") }
        isID = name == "_id"
    }

    /// Whether this is `_id`, whose conditions compare in raw order.
    package let isID: Bool

    /// What `mango_doc:get_field/2` finds at this path.
    package enum Lookup {
        case found(JSONValue)
        /// A member is missing from an object.
        case notFound
        /// The path goes through a value that has no members (a number,
        /// a string) or past the end of an array.
        case badPath
    }

    /// The value at this path in `value`.
    package func lookup(in value: JSONValue) -> Lookup {
        var current = value
        for part in parts {
            switch current {
            case .object(let members):
                guard let member = members.first(where: { $0.key == part }) else { return .notFound }
                current = member.value
            case .array(let elements):
                guard let index = Int(part), index >= 0, index < elements.count else { return .badPath }
                current = elements[index]
            default:
                return .badPath
            }
        }
        return .found(current)
    }
}
