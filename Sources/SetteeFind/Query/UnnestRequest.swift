public import SetteeCore

/// A query with one result per matching array element, each with its
/// document: SQL++'s `UNNEST` (Couchbase Lite), in Mango's terms.
///
/// ```swift
/// // Every home phone of every contact, of the documents of type "person".
/// var request = UnnestRequest(path: "contacts[].phones", elementSelector: ["type": "home"],
///                             parentSelector: ["type": "person"])
/// request.limit = 10
/// for match in try db.findElements(request).elements {
///     print(match.documentID, match.element["number"] ?? nil)
/// }
/// ```
///
/// An array index on the same path (``ArrayIndex``) serves the query when
/// the element selector requires its expressions (or is empty: every element);
/// otherwise every document is read. Either way the results are the same: in
/// document `_id` order, then in the elements' order within the document.
/// A page ends with a bookmark that the next request passes to go on from
/// the element after it, even within the same document.
public struct UnnestRequest: Sendable {
    /// The path of the arrays whose elements are results (`tags`, `contacts[].phones`: see ``ArrayIndex``).
    public var path: String
    /// The conditions each element must meet, as inside `$elemMatch`
    /// (`{"type": "home"}` on objects, `{"$gt": 3}` on the element itself);
    /// empty (`{}`) for every element.
    public var elementSelector: JSONValue
    /// The Mango selector the element's document must match; empty for every document.
    public var parentSelector: JSONValue
    /// The most results (elements) returned; nil for all of them.
    public var limit: Int?
    /// Matching elements to skip before the first returned (after the bookmark's, with one).
    public var skip = 0
    /// The ``UnnestResult/bookmark`` of the previous page: the results
    /// resume after the element it names (the next one of the same
    /// document, or the first of the next); nil to start at the first.
    public var bookmark: String?
    /// Whether to bring the index up to date before reading it.
    public var update = true

    /// A request for the elements at `path` that match `elementSelector`, in documents that match `parentSelector`.
    public init(path: String, elementSelector: JSONValue = [:], parentSelector: JSONValue = [:], limit: Int? = nil) {
        self.path = path
        self.elementSelector = elementSelector
        self.parentSelector = parentSelector
        self.limit = limit
    }
}
