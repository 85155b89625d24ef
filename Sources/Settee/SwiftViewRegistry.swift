import Synchronization
import SetteeCore
import SetteeStorage
import SetteeViews

/// The views written in Swift (``Indexer``s) registered on one ``Database``
/// instance, by name. Registrations live in memory: another instance, or
/// another process, has only those it registers itself.
final class SwiftViewRegistry: Sendable {
    /// By the name's UTF-8 bytes (names are compared byte for byte, as design documents' are).
    private let views = Mutex<[[UInt8]: ViewDefinition]>([:])

    /// Registers `indexer`'s view.
    /// - Throws: ``DocumentError`` (`bad_request`) for an empty name, a name
    ///   with `/` (how design documents' views are named) or an unknown
    ///   built-in reduce; (`conflict`) for a name already registered.
    func register(_ indexer: any Indexer) throws -> ViewDefinition {
        let name = indexer.name
        guard !name.isEmpty else { throw DocumentError(.badRequest, "a Swift view's name must not be empty") }
        guard !name.utf8.contains(UInt8(ascii: "/")) else {
            throw DocumentError(.badRequest, "a Swift view's name must not contain \"/\": \"\(name)\" would be read as DDOC/VIEW, a view of a design document")
        }
        if case .builtin(let builtin)? = indexer.reduce {
            let known: Bool
            do {
                known = try BuiltinReducer(source: builtin) != nil
            } catch {
                throw DocumentError(.badRequest, "the reduce function of Swift view \"\(name)\": \(error.reason)")
            }
            guard known else {
                throw DocumentError(.badRequest, "\"\(builtin)\" is not a built-in reduce function (they start with \"_\": _count, _sum, _stats…)")
            }
        }
        let view = ViewDefinition(indexer: indexer)
        try views.withLock { views in
            guard views[Array(name.utf8)] == nil else {
                throw DocumentError(.conflict, "a Swift view named \"\(name)\" is already registered on this Database: unregister it first")
            }
            views[Array(name.utf8)] = view
        }
        return view
    }

    /// Removes the registration of the view `name`; whether there was one.
    func unregister(_ name: String) -> Bool {
        views.withLock { $0.removeValue(forKey: Array(name.utf8)) != nil }
    }

    /// The registered view named `name`, if any.
    func view(_ name: String) -> ViewDefinition? {
        views.withLock { $0[Array(name.utf8)] }
    }

    /// Every registered view, in the byte order of their names.
    var all: [ViewDefinition] {
        views.withLock { Array($0.values) }.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}
