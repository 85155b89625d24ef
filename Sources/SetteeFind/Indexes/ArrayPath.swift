import Foundation
package import SetteeCore

/// The path of an array index, in Couchbase Lite's notation: `tags` is the
/// array at `tags`; `contacts[].phones` is, for each element of the array at
/// `contacts`, the array at its `phones`, all of them one after the other.
/// Each part between `[]` is a Mango field path (dotted, `\.` for a dot in a
/// name); a trailing `[]` (`tags[]`) says the same as none.
package struct ArrayPath: Sendable, Hashable {
    /// The path as written.
    package let name: String
    /// The field paths from one array to the next: `contacts`, then `phones`.
    package let segments: [FieldPath]

    /// Reads `name`.
    /// - Throws: ``MangoError`` `invalid_field_name` for an empty part (`a[].`, `[].a`, `a..b`).
    package init(_ name: String) throws(MangoError) {
        self.name = name
        var text = name
        if text.hasSuffix("[]") { text.removeLast(2) }
        var segments: [FieldPath] = []
        for part in text.components(separatedBy: "[].") {
            guard !part.isEmpty, !part.contains("[]"), let segment = try? FieldPath(part) else { throw .invalidFieldName(name) }
            segments.append(segment)
        }
        self.segments = segments
    }

    /// The field of the document that holds the outermost array: what CouchDB,
    /// which knows no array index, sees as the indexed field.
    package var root: FieldPath { segments[0] }

    /// What is at the end of the path in one document.
    package struct Values {
        /// The elements of the arrays at the end of the path, in order.
        package var elements: [JSONValue] = []
        /// Values found at the end of the path that are not arrays: no
        /// elements, but Mango's `$in` matches them as it matches an element.
        package var others: [JSONValue] = []
    }

    /// The elements at this path in `value` (a document, or the value of its
    /// ``root`` when `fromRoot`), and the values at its end that are no arrays.
    /// Only arrays are walked into, as `$elemMatch` walks into them.
    package func values(in value: JSONValue, fromRoot: Bool = false) -> Values {
        var result = Values()
        var current: [JSONValue] = [value]
        for (position, segment) in segments.enumerated() {
            let isLast = position == segments.count - 1
            var next: [JSONValue] = []
            for value in current {
                let found: JSONValue
                if position == 0 && fromRoot {
                    found = value
                } else {
                    guard case .found(let inner) = segment.lookup(in: value) else { continue }
                    found = inner
                }
                if case .array(let elements) = found {
                    next.append(contentsOf: elements)
                } else if isLast {
                    result.others.append(found)
                }
            }
            current = next
        }
        result.elements = current
        return result
    }

    /// The elements at this path in a document.
    package func elements(in document: JSONValue) -> [JSONValue] {
        values(in: document).elements
    }

    /// `{"a": {"$elemMatch": {"b": {"$elemMatch": condition}}}}` for `a[].b`:
    /// a selector that holds when `condition` (what applies to an array at the
    /// path's end, e.g. `{"$elemMatch": {...}}`) holds at the end of the path
    /// under some element of each array on the way.
    package func selector(endingWith condition: JSONValue) -> JSONValue {
        var selector = condition
        for (position, segment) in segments.enumerated().reversed() {
            let wrapped: JSONValue = .object([(segment.name, selector)])
            selector = position == 0 ? wrapped : ["$elemMatch": wrapped]
        }
        return selector
    }
}
