import SetteeCore

/// What an ``UnnestRequest`` returned.
public struct UnnestResult: Sendable {
    /// The matching elements with their documents, by document `_id`, then by position.
    public var elements: [UnnestedElement]
    /// The index that served the query: an array index on the path, or `_all_docs` (every document read).
    public var index: MangoIndex
    /// How much work the query took (entries of the index read, documents read).
    public var executionStats: FindResult.ExecutionStats
    /// Where this page ended: pass it as the next request's
    /// ``UnnestRequest/bookmark`` for the elements after the last one
    /// returned. With no element returned, the request's own bookmark (or
    /// `"nil"`), as `find` hands it back.
    public var bookmark: String
}
