public import SetteeCore

/// An array index, as Couchbase Lite 3.2's `ArrayIndexConfiguration`: one
/// entry per element of the arrays at a path, keyed by expressions (field
/// paths) evaluated on the element, or by the element itself without any.
///
/// The path is written as Couchbase Lite writes it: `tags` for the array at
/// `tags`; `contacts[].phones` for, in each element of the array at
/// `contacts`, the array at `phones` (all of them, one after the other).
///
/// `find` uses an array index on `P` for `{"P": {"$elemMatch": {...}}}` whose
/// conditions require the expressions, and, without expressions, for
/// `{"P": {"$in": [...]}}` and `{"P": {"$all": [...]}}` (`a[].b` is written
/// `{"a": {"$elemMatch": {"b": ...}}}`); ``UnnestRequest`` (one result per
/// element) uses it too.
///
/// ```swift
/// try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
/// let home = try db.find(FindRequest(selector: [
///     "contacts": ["$elemMatch": ["phones": ["$elemMatch": ["type": "home"]]]]]))
/// ```
public struct ArrayIndex: IndexConfiguration, Equatable {
    /// The path of the arrays (`tags`, `contacts[].phones`).
    public var path: String
    /// The field paths evaluated on each element, in key order; empty to key each entry by the element itself.
    public var expressions: [String]
    /// A selector: only the documents that match it are indexed (see ``ValueIndex/partialFilter``).
    public var partialFilter: JSONValue?

    /// An index of the elements of the arrays at `path`, keyed by `expressions` on each.
    public init(path: String, expressions: [String] = [], partialFilter: JSONValue? = nil) {
        self.path = path
        self.expressions = expressions
        self.partialFilter = partialFilter
    }

    /// `{"index": {"array": path, "fields": expressions}, "type": "array", "name": name, "ddoc": name}`.
    public func request(named name: String) throws(MangoError) -> IndexRequest {
        var definition: [(key: String, value: JSONValue)] = [
            ("array", .string(path)), ("fields", .array(expressions.map(JSONValue.string))),
        ]
        if let partialFilter { definition.append(("partial_filter_selector", partialFilter)) }
        return try Self.request(.object(definition), type: "array", name: name)
    }
}
