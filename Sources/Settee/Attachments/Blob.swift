public import Foundation
import SetteeCore
import SetteeStorage

/// The bytes of an attachment and their content type: what a document's
/// `_attachments` holds under one name, as a Swift value.
///
/// A `Blob` holds its bytes in memory (``Content-swift.enum/data(_:)``), names a
/// file to read them from (``Content-swift.enum/file(_:)``), or stands for
/// bytes already stored (``Content-swift.enum/stored``, CouchDB's stub: what a
/// document read back holds).
///
/// As a property of a `Codable` document, under the key `_attachments`, blobs
/// are the document's attachments in CouchDB's shape: put with data they are
/// stored (once per digest, however many documents hold them); read back they
/// are stubs, and putting the value again keeps them.
///
/// ```swift
/// struct Note: Codable {
///     var text: String
///     var _attachments: [String: Blob]?
/// }
/// try db.put(Note(text: "hi", _attachments: ["photo.png": Blob(data: png, contentType: "image/png")]), id: "n1")
/// let photo = try db.attachment("photo.png", of: "n1")?.data
/// ```
///
/// For large files, ``Database/putAttachment(_:named:of:revision:)-1lw7x`` with a
/// file blob streams them; as a document property a blob's bytes travel
/// inline (base64) within the document's size limit.
public struct Blob: Sendable, Equatable, Codable {
    /// Where a blob's bytes are.
    public enum Content: Sendable, Equatable {
        /// Bytes in memory.
        case data(Data)
        /// A file, read when the blob is stored.
        case file(URL)
        /// Bytes already stored with a document (a stub): read them with
        /// ``Database/attachment(_:of:)-9k0x``.
        case stored
    }

    /// The MIME type, e.g. `text/plain`.
    public var contentType: String
    /// The bytes, or where they are.
    public var content: Content
    /// The number of bytes, when known (always for stored and data blobs).
    public var length: Int?
    /// CouchDB's digest, `md5-` and the MD5 of the bytes in base64, when known.
    public var digest: String?
    /// The generation of the document revision that stored the bytes, when stored.
    public var revpos: Int?

    /// Bytes in memory.
    public init(data: Data, contentType: String = "application/octet-stream") {
        self.contentType = contentType
        self.content = .data(data)
        self.length = data.count
    }

    /// The bytes of a file, read when the blob is stored.
    public init(file: URL, contentType: String = "application/octet-stream") {
        self.contentType = contentType
        self.content = .file(file)
    }

    init(stub: AttachmentStub, data: Data?) {
        contentType = stub.contentType
        content = data.map(Content.data) ?? .stored
        length = stub.length
        digest = stub.digestText
        revpos = stub.revpos
    }

    /// The bytes held in memory (nil for a file or stored blob).
    public var data: Data? {
        if case .data(let data) = content { return data }
        return nil
    }

    private enum CodingKeys: String, CodingKey {
        case contentType = "content_type", revpos, digest, length, stub, data
    }

    /// Reads CouchDB's attachment JSON: a stub or inline base64 `data`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        contentType = try container.decodeIfPresent(String.self, forKey: .contentType) ?? AttachmentEdit.defaultContentType
        revpos = try container.decodeIfPresent(Int.self, forKey: .revpos)
        digest = try container.decodeIfPresent(String.self, forKey: .digest)
        length = try container.decodeIfPresent(Int.self, forKey: .length)
        if let data = try container.decodeIfPresent(Data.self, forKey: .data) {
            content = .data(data)
            length = data.count
        } else {
            content = .stored
        }
    }

    /// Writes CouchDB's attachment JSON: inline base64 `data` for bytes in
    /// memory or in a file (read whole), a stub for stored bytes.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(contentType, forKey: .contentType)
        switch content {
        case .data(let data):
            try container.encode(data, forKey: .data)
        case .file(let url):
            try container.encode(try Data(contentsOf: url), forKey: .data)
        case .stored:
            try container.encodeIfPresent(revpos, forKey: .revpos)
            try container.encodeIfPresent(digest, forKey: .digest)
            try container.encodeIfPresent(length, forKey: .length)
            try container.encode(true, forKey: .stub)
        }
    }
}
