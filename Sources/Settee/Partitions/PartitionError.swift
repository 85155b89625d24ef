import SetteeCore

/// A document id or partition name a partitioned database refuses, with
/// CouchDB's error word (`illegal_docid`, `illegal_partition`) and reason.
public struct PartitionError: SetteeError, Equatable {
    /// CouchDB's error word: `illegal_docid` or `illegal_partition`.
    public var error: String
    /// CouchDB's reason, word for word.
    public var reason: String
    /// The document's id, when a write was refused.
    public var id: String?

    /// An error with CouchDB's word and reason.
    public init(error: String, reason: String, id: String? = nil) {
        self.error = error
        self.reason = reason
        self.id = id
    }

    /// Always ``SetteeErrorCode/badRequest``.
    public var errorCode: SetteeErrorCode { .badRequest }

    public var description: String {
        "\(error): \(reason)" + (id.map { " (document \"\($0)\")" } ?? "")
    }
}
