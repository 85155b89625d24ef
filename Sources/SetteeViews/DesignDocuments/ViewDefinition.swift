public import SetteeCore
package import SetteeStorage
/// One view of a design document, or a view written in Swift (an
/// ``Indexer``), and the signature that versions its index.
public struct ViewDefinition: Sendable, Equatable {
    /// The design document's id (`_design/NAME`); empty for a view written in Swift.
    public let designDocument: String
    /// The view's name.
    public let name: String
    /// The map function's JavaScript source; empty for a view written in Swift.
    public let map: String
    /// The reduce function: JavaScript source, a built-in (`_count`, `_sum`,
    /// `_stats`, `_approx_count_distinct`, `_first`, `_last`, `_top_N`, `_bottom_N`),
    /// `swift` for a Swift view's reduce function, or nil.
    public let reduce: String?
    /// How keys are ordered (`options.collation`).
    public let collation: CollationMode
    /// The view's `options` as written.
    public let viewOptions: JSONValue
    public let language: String
    /// The design document's `options.include_design`.
    public let includeDesign: Bool
    /// The design document's `options.local_seq`.
    public let localSequence: Bool
    /// `{"views":{"lib":…}}` when the design document has CommonJS modules.
    public let library: JSONValue?
    /// Whether the view is partitioned (CouchDB's partitioned views, in a
    /// partitioned database): its rows are kept by partition
    /// (`PartitionKey`) and it answers partition queries only.
    public let partitioned: Bool

    /// The version of this view's index: a SHA-256 over a canonical form of
    /// everything that decides the index's content. Editing anything else (other
    /// views, other members) leaves it unchanged, so only this view rebuilds.
    public let signature: String
    /// Whether a JavaScript reduce function may read its keys (see
    /// ``Reducer/readsKeys(_:)``), worked out once per definition.
    package let reduceReadsKeys: Bool
    /// The view written in Swift, or nil for a design document's JavaScript view.
    package let swift: SwiftIndexer?

    /// The ``Indexer`` of a view written in Swift, or nil for a design document's view.
    public var indexer: (any Indexer)? { swift?.indexer }

    package init(designDocument: String, name: String, map: String, reduce: String?, collation: CollationMode, viewOptions: JSONValue,
         language: String, includeDesign: Bool, localSequence: Bool, library: JSONValue?, partitioned: Bool = false) {
        self.designDocument = designDocument
        self.partitioned = partitioned
        self.name = name
        self.map = map
        self.reduce = reduce
        self.collation = collation
        self.viewOptions = viewOptions
        self.language = language
        self.includeDesign = includeDesign
        self.localSequence = localSequence
        self.library = library
        swift = nil
        reduceReadsKeys = reduce.map(Reducer.readsKeys) ?? false
        var canonical: [UInt8] = []
        var definition: JSONValue = [
            "language": .string(language),
            "map": .string(map),
            "reduce": reduce.map(JSONValue.string) ?? .null,
            "options": viewOptions,
            "include_design": .bool(includeDesign),
            "local_seq": .bool(localSequence),
            // The map function can require only from views.lib.
            "lib": library ?? .null,
            // How rows are stored: another layout is another index.
            "format": .number(Double(IndexRow.format)),
        ]
        // Rows kept by partition: another index than the same view's global one.
        if partitioned { definition = Self.partitionedDefinition(definition) }
        JSONWriter.write(definition.canonicalized(), into: &canonical)
        signature = SHA256.hexDigest(canonical)
    }

    /// A definition with `"partitioned": true`: the signature of a partitioned
    /// view differs from that of the same view kept globally.
    private static func partitionedDefinition(_ definition: JSONValue) -> JSONValue {
        guard case .object(var members) = definition else { return definition }
        members.append(("partitioned", true))
        return .object(members)
    }

    /// A view written in Swift: a view of no design document, named
    /// `indexer.name`, whose signature is a SHA-256 over its name, version,
    /// the kind of its reduce function (a built-in's name, or `swift`) and
    /// the index's row format.
    package init(indexer: any Indexer) {
        designDocument = ""
        name = indexer.name
        map = ""
        reduce = indexer.reduce?.source
        collation = .unicode
        viewOptions = .null
        language = "swift"
        includeDesign = false
        localSequence = false
        library = nil
        partitioned = false
        reduceReadsKeys = true
        var canonical: [UInt8] = []
        let definition: JSONValue = [
            "swift_view": .string(indexer.name),
            "version": .string(indexer.version),
            "reduce": reduce.map(JSONValue.string) ?? .null,
            "format": .number(Double(IndexRow.format)),
        ]
        JSONWriter.write(definition.canonicalized(), into: &canonical)
        signature = SHA256.hexDigest(canonical)
        swift = SwiftIndexer(indexer: indexer, signature: signature)
    }

    /// A view of a `"language": "query"` design document (one of `find`'s
    /// JSON indexes): `indexer` maps in Swift, and the index's version is a
    /// hash of `definition` (what decides its rows).
    package init(designDocument: String, name: String, queryIndexer indexer: any Indexer, definition: JSONValue, partitioned: Bool = false) {
        self.designDocument = designDocument
        self.name = name
        map = ""
        reduce = indexer.reduce?.source
        collation = .unicode
        viewOptions = .null
        language = "query"
        includeDesign = false
        localSequence = false
        library = nil
        self.partitioned = partitioned
        reduceReadsKeys = true
        var canonical: [UInt8] = []
        var versioned: JSONValue = ["query_index": definition, "format": .number(Double(IndexRow.format))]
        if partitioned { versioned = Self.partitionedDefinition(versioned) }
        JSONWriter.write(versioned.canonicalized(), into: &canonical)
        signature = SHA256.hexDigest(canonical)
        swift = SwiftIndexer(indexer: indexer, signature: signature)
    }

    /// Whether this view's map runs in Swift (a registered ``Indexer``, or a `find` JSON index).
    public var isSwift: Bool { swift != nil }

    /// The built-in reducer, when `reduce` names one.
    package var builtinReducer: BuiltinReducer? {
        guard let reduce else { return nil }
        return try? BuiltinReducer(source: reduce)
    }

    /// `DDOC/VIEW` as the CLI names it; a Swift view's name alone.
    public var path: String { designDocument.isEmpty ? name : "\(designDocument.dropFirst("_design/".count))/\(name)" }
}

/// An ``Indexer`` in a ``ViewDefinition``: equal to another of the same
/// signature (the same name, version and reduce kind claim the same index).
package struct SwiftIndexer: Sendable, Equatable {
    package let indexer: any Indexer
    let signature: String

    package static func == (lhs: SwiftIndexer, rhs: SwiftIndexer) -> Bool { lhs.signature == rhs.signature }
}

extension JSONValue {
    /// The same value with object members sorted by key, recursively: equal
    /// meaning, equal text.
    package func canonicalized() -> JSONValue {
        switch self {
        case .array(let elements): .array(elements.map { $0.canonicalized() })
        case .object(let members): .object(members.map { ($0.key, $0.value.canonicalized()) }.sorted { $0.0 < $1.0 }.map { (key: $0.0, value: $0.1) })
        default: self
        }
    }
}

extension StorageError {
    /// The damage found while reading `view`'s index, saying which view and index.
    package func naming(_ view: ViewDefinition) -> StorageError {
        var error = self
        error.operation += " (the index of view \(view.path), signature \(view.signature))"
        return error
    }
}
