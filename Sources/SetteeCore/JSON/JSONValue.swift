/// A JSON value as a tree.
///
/// Objects keep their members in document order, duplicates included, because
/// CouchDB collation compares objects member by member in the order written.
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number: its value as a `Double` (what comparisons, collation and
    /// JavaScript see) and, where writing the `Double` would not give back
    /// the text it was read from (`1.0`, `2.50`, `1e3`, an integer past 15
    /// digits such as `9007199254740993`), that `literal`, written in its
    /// place: a number read and written again is the number sent, as CouchDB
    /// returns it.
    case number(Double, literal: String? = nil)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, its members in document order.
    case object([(key: String, value: JSONValue)])

    /// Structural equality: object members are compared pairwise in order and
    /// numbers by value, as CouchDB compares them (so `1 == 1.0`, `0 == -0`,
    /// `NaN != NaN`, and integers past 2^53 exactly, by their literals).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null):
            return true
        case let (.bool(a), .bool(b)):
            return a == b
        case let (.number(a, aLiteral), .number(b, bLiteral)):
            // Integers past 2^53 that round to one double are still two numbers.
            return a == b && (a.magnitude < 9_007_199_254_740_992 || NumberOrder.compare(a, aLiteral, b, bLiteral) == 0)
        case let (.string(a), .string(b)):
            return a == b
        case let (.array(a), .array(b)):
            return a == b
        case let (.object(a), .object(b)):
            guard a.count == b.count else { return false }
            for index in a.indices where a[index].key != b[index].key || a[index].value != b[index].value {
                return false
            }
            return true
        default:
            return false
        }
    }
}

// MARK: - Accessors

extension JSONValue {
    /// The value of the first member named `key`, or `nil` if there is none or
    /// this is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.key == key })?.value
    }

    /// The element at `index`, or `nil` if the index is out of bounds or this
    /// is not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number, if this is a number.
    public var doubleValue: Double? {
        if case .number(let value, _) = self { return value }
        return nil
    }

    /// The Boolean, if this is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members in document order, if this is an object.
    public var objectValue: [(key: String, value: JSONValue)]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

// MARK: - Text

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text, as `JSON.stringify` writes it.
    public var description: String { JSONWriter.string(self) }

    /// The compact JSON text, as `JSON.stringify` writes it.
    public var jsonText: String { JSONWriter.string(self) }

    /// The compact JSON text with every number that kept its text written
    /// as it was read (`1.0`, `2.50`, `9007199254740993`): a document parsed
    /// and written again is the document sent, numbers included, as CouchDB
    /// keeps them. ``jsonText`` writes numbers as JavaScript does.
    public var exactJSONText: String { JSONWriter.string(self, literals: true) }

    /// Parses `text` as exactly one JSON value.
    public init(parsing text: String) throws(JSONParseError) {
        self = try JSONParser.parse(text)
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// Members keep the order in which the literal lists them.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(elements.map { (key: $0.0, value: $0.1) })
    }
}

// MARK: - Hashing

extension JSONValue: Hashable {
    /// Hashes what ``==(_:_:)`` compares: equal values hash alike.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0)
        case .bool(let value):
            hasher.combine(1)
            hasher.combine(value)
        case .number(let value, _):
            hasher.combine(2)
            hasher.combine(value)
        case .string(let value):
            hasher.combine(3)
            hasher.combine(value)
        case .array(let elements):
            hasher.combine(4)
            hasher.combine(elements)
        case .object(let members):
            hasher.combine(5)
            hasher.combine(members.count)
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }
}
