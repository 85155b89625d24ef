import Synchronization
public import SetteeCore
import SetteeStorage
/// A CouchDB design document (`_design/NAME`): views whose map and reduce
/// functions are JavaScript source, plus the CommonJS modules in `views.lib`.
public struct DesignDocument: Sendable, Equatable {
    /// `_design/NAME`.
    public let id: String
    /// The name after `_design/`.
    public var name: String { String(id.dropFirst("_design/".count)) }
    /// `javascript`, or `query` for a design document holding `find`'s JSON
    /// indexes (CouchDB's Mango indexes), which has no JavaScript views.
    public let language: String
    /// `options.include_design`: map functions also see design documents.
    public let includeDesign: Bool
    /// `options.local_seq`: documents carry `_local_seq` when mapped.
    public let localSequence: Bool
    /// The views, in the byte order of their names (UTF-8). Names are
    /// compared byte for byte: `é` composed and decomposed are two views.
    public let views: [ViewDefinition]
    /// The whole design document as JSON.
    public let json: JSONValue
    /// `validate_doc_update`: the JavaScript function every document write is
    /// checked with, or nil.
    public let validateDocumentUpdate: String?

    private static let queryViewMaker = Mutex<@Sendable (JSONValue, String, Bool) -> [ViewDefinition]>({ _, _, _ in [] })

    /// Makes the views of a `"language": "query"` design document (`find`'s
    /// JSON indexes) from its JSON, id, and whether the database is
    /// partitioned. Views know no Mango: the module that does (`SetteeFind`)
    /// is installed here by `Database`.
    package static var queryViews: @Sendable (JSONValue, String, Bool) -> [ViewDefinition] {
        get { queryViewMaker.withLock { $0 } }
        set { queryViewMaker.withLock { $0 = newValue } }
    }

    /// Parses and checks the shape of a design document (functions are compiled
    /// separately, on the JavaScript engine).
    ///
    /// - Parameters:
    ///   - file: Where it came from, for error messages.
    ///   - databaseIsPartitioned: Whether the database it belongs to is
    ///     partitioned: its views are then partitioned unless its
    ///     `options.partitioned` is false (``ViewDefinition/partitioned``).
    public init(json: JSONValue, file: String? = nil, databaseIsPartitioned: Bool = false) throws(DesignDocumentError) {
        func failure(_ reason: String, id: String? = nil, view: String? = nil) -> DesignDocumentError {
            DesignDocumentError(file: file, designDocument: id, view: view, reason: reason)
        }
        guard case .object = json else { throw failure("a design document must be a JSON object") }
        guard case .string(let id)? = json["_id"] else { throw failure("a design document needs an \"_id\" of the form \"_design/NAME\"") }
        guard id.hasPrefix("_design/"), id.count > "_design/".count else {
            throw failure("a design document's _id must start with \"_design/\" and name it", id: id)
        }
        let language: String
        switch json["language"] {
        case nil, .null?: language = "javascript"
        case .string(let text)?: language = text
        default: throw failure("\"language\" must be a string", id: id)
        }
        guard language == "javascript" || language == "query" else {
            throw failure("unsupported language \"\(language)\": Settee runs javascript, and query for find's indexes", id: id)
        }
        if language == "query" {
            // CouchDB's Mango indexes: views mapped in Swift, made by the module that knows them.
            self.id = id
            self.language = language
            includeDesign = false
            localSequence = false
            views = Self.queryViews(json, id, databaseIsPartitioned).sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            self.json = json
            validateDocumentUpdate = nil
            return
        }
        let options = json["options"]
        if let options, !options.isNull, options.objectValue == nil { throw failure("\"options\" must be an object", id: id) }
        let includeDesign = options?["include_design"]?.boolValue ?? false
        let localSequence = options?["local_seq"]?.boolValue ?? false
        // couch_mrview_index:set_partitioned/2: the database's default unless the design document says.
        let partitioned = databaseIsPartitioned && options?["partitioned"]?.boolValue != false

        var views: [ViewDefinition] = []
        var library: JSONValue?
        switch json["views"] {
        case nil, .null?:
            break
        case .object(let members)?:
            if let lib = json["views"]?["lib"] {
                guard case .object = lib else { throw failure("\"views.lib\" must be an object of CommonJS modules", id: id, view: "lib") }
                library = ["views": ["lib": lib]]
            }
            var names = Set<[UInt8]>()
            for (name, view) in members where !name.utf8.elementsEqual("lib".utf8) {
                guard !name.isEmpty else { throw failure("a view's name must not be empty: it could not be queried", id: id, view: name) }
                // JSON keeps both members of a duplicated name; only one could be queried.
                guard names.insert(Array(name.utf8)).inserted else {
                    throw failure("the view name appears more than once in \"views\": rename or remove one", id: id, view: name)
                }
                guard case .object = view else { throw failure("a view must be an object with a \"map\" function", id: id, view: name) }
                guard case .string(let map)? = view["map"] else {
                    throw failure(view["map"] == nil ? "the view has no \"map\" function" : "\"map\" must be a string of JavaScript source", id: id, view: name)
                }
                var reduce: String?
                switch view["reduce"] {
                case nil, .null?: reduce = nil
                case .string(let source)?: reduce = source
                default: throw failure("\"reduce\" must be a string (JavaScript source or a built-in like \"_count\")", id: id, view: name)
                }
                var collation = CollationMode.unicode
                let viewOptions = view["options"] ?? .null
                if case .string(let mode)? = viewOptions["collation"] {
                    guard let parsed = CollationMode(rawValue: mode) else {
                        throw failure("unknown collation \"\(mode)\" (use \"raw\" or leave it out)", id: id, view: name)
                    }
                    collation = parsed
                }
                if let source = reduce, source.hasPrefix("_") {
                    do {
                        _ = try BuiltinReducer(source: source)
                    } catch {
                        throw DesignDocumentError(file: file, designDocument: id, view: name, function: "reduce", reason: error.reason)
                    }
                }
                views.append(ViewDefinition(
                    designDocument: id, name: name, map: map, reduce: reduce, collation: collation,
                    viewOptions: viewOptions, language: language, includeDesign: includeDesign,
                    localSequence: localSequence, library: library, partitioned: partitioned))
            }
        default:
            throw failure("\"views\" must be an object", id: id)
        }
        switch json["validate_doc_update"] {
        case nil, .null?: validateDocumentUpdate = nil
        case .string(let source)?: validateDocumentUpdate = source
        default: throw failure("\"validate_doc_update\" must be a string of JavaScript source", id: id)
        }
        self.id = id
        self.language = language
        self.includeDesign = includeDesign
        self.localSequence = localSequence
        self.views = views.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        self.json = json
    }

    /// The view with this name, byte for byte (Swift's `==` would take `é`
    /// composed and decomposed for the same name).
    public func view(_ name: String) -> ViewDefinition? {
        views.first { $0.name.utf8.elementsEqual(name.utf8) }
    }
}
