public import SetteeCore

/// The reduce function of a view written in Swift (``Indexer/reduce``).
public enum ReduceFunction: Sendable {
    /// A built-in reduce function, by its CouchDB name: `_count`, `_sum`,
    /// `_stats`, `_approx_count_distinct`, `_first`, `_last`, `_top_N`, `_bottom_N`.
    case builtin(String)
    /// A reduce function in Swift, called as CouchDB calls a JavaScript one:
    /// with the rows' keys (each with its document id) and values, or, on
    /// rereduce, with no keys and the values its earlier calls returned. It
    /// runs while an index is written and while a query reads, so it should
    /// be quick; an error it throws fails the query.
    case swift(@Sendable (_ keys: [(key: JSONValue, id: String)]?, _ values: [JSONValue], _ rereduce: Bool) throws -> JSONValue)

    /// `_count`: the number of rows.
    public static let count = ReduceFunction.builtin("_count")
    /// `_sum`: the sum of the values (numbers, or arrays of numbers).
    public static let sum = ReduceFunction.builtin("_sum")
    /// `_stats`: sum, count, min, max and sum of squares of the values.
    public static let stats = ReduceFunction.builtin("_stats")

    /// How the view's signature and definition name it: the built-in's name, or `swift`.
    package var source: String {
        switch self {
        case .builtin(let name): name
        case .swift: Self.swiftSource
        }
    }

    /// What ``ViewDefinition/reduce`` says for a reduce function in Swift.
    package static let swiftSource = "swift"
}
