public import SetteeCore
/// A stored document: its id, current revision, sequence number and body.
public struct Document: Sendable, Equatable {
    /// The document's `_id`.
    public let id: String
    /// The current `_rev`.
    public let revision: Revision
    /// The sequence number of the write that produced this revision.
    public let sequence: UInt64
    /// Whether this revision is a deletion (a tombstone).
    public let isDeleted: Bool

    /// The members other than `_id`, `_rev` and `_deleted`, as a JSON object (UTF-8).
    public let body: [UInt8]

    /// The whole document as JSON, `_id` and `_rev` first, as CouchDB returns it.
    public var jsonBytes: [UInt8] {
        DocumentRecord.fullJSON(id: id, revision: revision, deleted: isDeleted, body: body)
    }

    /// The whole document as JSON text.
    public var json: String {
        String(decoding: jsonBytes, as: UTF8.self)
    }

    /// The whole document as a ``JSONValue``.
    public var value: JSONValue {
        get throws { try JSONParser.parse(jsonBytes) }
    }
}

/// The outcome of a successful write, as CouchDB reports it (`{"ok":true,"id":…,"rev":…}`).
public struct WriteResult: Sendable, Equatable {
    public let id: String
    public let revision: Revision
    public let sequence: UInt64
}

/// One entry of the changes feed: the latest write to a document.
public struct Change: Sendable, Equatable {
    public let sequence: UInt64
    public let id: String
    public let revision: Revision
    public let isDeleted: Bool

    package init(sequence: UInt64, id: String, revision: Revision, isDeleted: Bool) {
        self.sequence = sequence
        self.id = id
        self.revision = revision
        self.isDeleted = isDeleted
    }
}
