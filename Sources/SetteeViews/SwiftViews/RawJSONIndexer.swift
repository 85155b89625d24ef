/// An ``Indexer`` whose map reads a document only as JSON text
/// (``IndexedDocument/withJSONBytes(_:)``), with its ``IndexedDocument/id``
/// and ``IndexedDocument/sequence``: the map stage does not locate the
/// document's members for it, and its ``IndexedDocument/subscript(_:)``
/// finds none.
package protocol RawJSONIndexer: Indexer {}
