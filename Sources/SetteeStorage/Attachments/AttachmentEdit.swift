package import Foundation
package import SetteeCore

/// Where the bytes of an attachment being written come from.
package enum AttachmentSource: Sendable {
    /// Bytes in memory (inline base64 `data`, or a ``Blob`` holding data),
    /// stored from where they are, not copied first.
    case bytes(Data)
    /// A file, read a chunk at a time while it is stored.
    case file(URL)
    /// A file Settee wrote (an attachment compressed before it is stored),
    /// removed once nothing holds it.
    case temporaryFile(TemporaryFile)
}

/// A file removed when the last value holding it goes.
package final class TemporaryFile: Sendable {
    package let url: URL

    /// A new, empty name in the system's temporary folder.
    package init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("settee-attachment-\(UUID().uuidString)")
    }

    deinit { unlink(url.path) }
}

/// One member of an edit's `_attachments`: new bytes, or a stub that keeps
/// the current revision's attachment of that name.
package struct AttachmentEdit: Sendable {
    package enum Content: Sendable {
        /// Keep the current revision's attachment; `revpos`, when given, must be its revpos.
        case stub(revpos: Int?)
        /// New bytes, their MD5 and length known before the write. With
        /// `encodedLength`, the source holds them gzip-encoded (as CouchDB
        /// stores compressible types): `digest` is the MD5 of the encoded
        /// bytes, `length` the decoded length.
        case new(AttachmentSource, digest: [UInt8], length: Int, encodedLength: Int? = nil)
    }

    package var name: String
    package var contentType: String
    package var content: Content
    /// The `revpos` a replicated write (`new_edits: false`) gives new bytes,
    /// kept as the sender has it, as CouchDB keeps it; an edit's own write
    /// gives them its new generation.
    package var senderRevpos: Int?

    package init(name: String, contentType: String, content: Content) {
        self.name = name
        self.contentType = contentType
        self.content = content
    }

    /// CouchDB's content type for attachments that name none.
    package static let defaultContentType = "application/octet-stream"

    /// New bytes from memory; a compressible type (``Gzip/isCompressible(contentType:)``)
    /// gzip-encoded first, as CouchDB stores it, so its digest is CouchDB's.
    package init(name: String, contentType: String, bytes: Data) {
        if Gzip.isCompressible(contentType: contentType) {
            let encoded = Data(Gzip.compress(bytes))
            let digest = encoded.withUnsafeBytes { MD5.hash($0) }
            self.init(name: name, contentType: contentType,
                      content: .new(.bytes(encoded), digest: digest, length: bytes.count, encodedLength: encoded.count))
            return
        }
        let digest = bytes.withUnsafeBytes { MD5.hash($0) }
        self.init(name: name, contentType: contentType, content: .new(.bytes(bytes), digest: digest, length: bytes.count))
    }

    /// New bytes from a file: it is read once here for its digest and length,
    /// and again while it is stored (checked against them). A compressible
    /// type is gzip-encoded into a temporary file first.
    package init(name: String, contentType: String, file: URL) throws {
        if Gzip.isCompressible(contentType: contentType) {
            let encoded = TemporaryFile()
            let (length, encodedLength, digest) = try AttachmentBodies.compress(file: file, into: encoded.url)
            self.init(name: name, contentType: contentType,
                      content: .new(.temporaryFile(encoded), digest: digest, length: length, encodedLength: encodedLength))
            return
        }
        let (digest, length) = try AttachmentBodies.digest(ofFile: file)
        self.init(name: name, contentType: contentType, content: .new(.file(file), digest: digest, length: length))
    }

    /// New bytes from a file that holds them gzip-encoded (a part sent with
    /// `"encoding": "gzip"`), stored as they are, as CouchDB stores them:
    /// inflated once here to check that they are gzip (of `length` bytes, when given).
    package init(name: String, contentType: String, gzipFile file: URL, length: Int?) throws {
        let (digest, encodedLength) = try AttachmentBodies.digest(ofFile: file)
        let decoded = try AttachmentBodies.decodedLength(ofGzipFile: file)
        guard length == nil || decoded == length else {
            throw DocumentError(.badRequest, "attachment \(name): its gzip-encoded bytes inflate into \(decoded) bytes, not the \(length ?? 0) its length says")
        }
        self.init(name: name, contentType: contentType, content: .new(.file(file), digest: digest, length: decoded, encodedLength: encodedLength))
    }

    /// Checks an attachment name as CouchDB does.
    package static func validate(name: String, id: String?) throws(DocumentError) {
        if name.isEmpty { throw DocumentError(.badRequest, "Attachment name can't be empty", id: id) }
        if name.hasPrefix("_") {
            throw DocumentError(.badRequest, "Attachment name '\(name)' starts with prohibited character '_'", id: id)
        }
    }

    /// The attachments an incoming document's `_attachments` member names.
    package static func parse(_ json: UnsafeRawBufferPointer, id: String?) throws(DocumentError) -> [AttachmentEdit] {
        guard case .object(let members)? = try? JSONParser.parse(json) else {
            throw DocumentError(.badRequest, "_attachments must be a JSON object of attachments by name", id: id)
        }
        var edits: [AttachmentEdit] = []
        edits.reserveCapacity(members.count)
        for (name, value) in members {
            try validate(name: name, id: id)
            guard case .object = value else {
                throw DocumentError(.badRequest, "attachment \(name) must be a JSON object", id: id)
            }
            var contentType = defaultContentType
            if let type = value["content_type"] {
                guard let text = type.stringValue else {
                    throw DocumentError(.badRequest, "attachment \(name): content_type must be a string", id: id)
                }
                contentType = text
            }
            let revpos = try Self.revpos(value, name: name, id: id)
            if value["stub"] == .bool(true) {
                edits.append(AttachmentEdit(name: name, contentType: contentType, content: .stub(revpos: revpos)))
            } else if let data = value["data"] {
                guard let text = data.stringValue, let bytes = Data(base64Encoded: text.filter { !$0.isWhitespace }) else {
                    throw DocumentError(.badRequest, "Invalid attachment data for \(name)", id: id)
                }
                var edit = AttachmentEdit(name: name, contentType: contentType, bytes: bytes)
                edit.senderRevpos = revpos
                edits.append(edit)
            } else if value["follows"] == .bool(true) {
                throw DocumentError(.badRequest, "attachment \(name) \"follows\" a multipart request, which Settee does not take: send its bytes as base64 \"data\", or put it with settee attachment put / Database.putAttachment", id: id)
            } else {
                throw DocumentError(.badRequest, "attachment \(name) has neither \"data\" (base64) nor \"stub\": true", id: id)
            }
        }
        return edits
    }

    /// An attachment's `revpos`, when it gives one.
    package static func revpos(_ value: JSONValue, name: String, id: String?) throws(DocumentError) -> Int? {
        guard let number = value["revpos"] else { return nil }
        guard let position = number.doubleValue, position >= 0, position == position.rounded(), position < 1e15 else {
            throw DocumentError(.badRequest, "attachment \(name): revpos must be a non-negative integer", id: id)
        }
        return Int(position)
    }
}

extension DocumentEdit {
    /// The body as the revision written will hold it, for
    /// `validate_doc_update`'s `newDoc`: its `_attachments` as stubs (new bytes
    /// with the revpos of the revision being written, stubs as `current` has
    /// them; a tombstone's only for an edit that names its revision). Without
    /// attachments, the body itself.
    package func bodyWithAttachmentStubs(current: DocumentRecord?) -> [UInt8] {
        guard let attachments, !attachments.isEmpty else { return body }
        var old: [AttachmentStub] = []
        if let current, current.hasAttachments, !current.isDeleted || revision != nil {
            old = (try? AttachmentStub.stubs(inBody: current.body)) ?? []
        }
        let generation = Int(current?.generation ?? 0) + 1
        var stubs: [AttachmentStub] = []
        for attachment in attachments {
            stubs.removeAll { $0.name == attachment.name }
            switch attachment.content {
            case .stub:
                if let kept = old.first(where: { $0.name == attachment.name }) { stubs.append(kept) }
            case .new(_, let digest, let length, _):
                stubs.append(AttachmentStub(name: attachment.name, contentType: attachment.contentType, revpos: generation,
                                            digest: digest, length: length))
            }
        }
        return AttachmentStub.body(body, adding: stubs)
    }
}
