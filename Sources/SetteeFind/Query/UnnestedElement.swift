public import SetteeCore

/// One result of an ``UnnestRequest``: an array element and its document.
public struct UnnestedElement: Sendable, Equatable {
    /// The document's `_id`.
    public var documentID: String
    /// The element's position among the document's elements at the path
    /// (for `a[].b`, counted across the arrays of every `a` element, in order).
    public var position: Int
    /// The element.
    public var element: JSONValue
    /// The whole document.
    public var document: JSONValue

    /// A result.
    public init(documentID: String, position: Int, element: JSONValue, document: JSONValue) {
        self.documentID = documentID
        self.position = position
        self.element = element
        self.document = document
    }
}
