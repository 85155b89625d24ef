public import SetteeCore

/// A value index, Couchbase Lite's name for CouchDB's JSON index: the
/// documents' values at some fields, in order, as one key; a document lacking
/// one of them is not in it. `find` uses it for selectors that require its
/// fields, and for sorts by them.
///
/// ```swift
/// try db.createIndex(ValueIndex("type", "year"), name: "type-year")
/// try db.createIndex(ValueIndex(["city"], partialFilter: ["type": "contact"]), name: "contact-city")
/// ```
public struct ValueIndex: IndexConfiguration, Equatable {
    /// The fields (dotted paths), in key order.
    public var fields: [String]
    /// Whether every field is in descending order (CouchDB allows one direction for all).
    public var descending: Bool
    /// A selector: only the documents that match it are indexed (a partial
    /// index, which `find` uses only when the request names it in `use_index`).
    public var partialFilter: JSONValue?

    /// An index of `fields`, in that order.
    public init(_ fields: [String], descending: Bool = false, partialFilter: JSONValue? = nil) {
        self.fields = fields
        self.descending = descending
        self.partialFilter = partialFilter
    }

    /// An index of `fields`, in that order.
    public init(_ fields: String..., descending: Bool = false, partialFilter: JSONValue? = nil) {
        self.init(fields, descending: descending, partialFilter: partialFilter)
    }

    /// `{"index": {"fields": [...], "partial_filter_selector": {...}}, "type": "json", "name": name, "ddoc": name}`.
    public func request(named name: String) throws(MangoError) -> IndexRequest {
        var definition: [(key: String, value: JSONValue)] = [
            ("fields", .array(fields.map { descending ? .object([(key: $0, value: JSONValue.string("desc"))]) : .string($0) })),
        ]
        if let partialFilter { definition.append(("partial_filter_selector", partialFilter)) }
        return try Self.request(.object(definition), type: "json", name: name)
    }
}
