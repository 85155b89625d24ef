package import Foundation
import SetteeCore
package import SetteeStorage

extension Database {
    /// Writes document `json` whose `_attachments` entries marked
    /// `"follows": true` take their bytes from `files`, in the order they
    /// appear (CouchDB's `multipart/related` PUT, each part saved to a file):
    /// the files are stored a chunk at a time, never whole in memory.
    ///
    /// - Throws: ``DocumentError`` `bad_request` when the number of files is
    ///   not the number of attachments that follow; the errors of ``put(_:)``.
    package func put(_ json: String, following files: [URL]) async throws -> WriteResult {
        try await background { try self.write(try self.edit(json, following: files)) }
    }

    /// Writes a replicated revision (`new_edits=false`) whose attachments
    /// follow in `files`, as ``put(_:following:)`` reads them (see
    /// ``WriteBatch/putReplicated(_:revisionsLimit:)``); nil when the revision was known.
    package func putReplicated(_ json: String, following files: [URL], revisionsLimit: Int? = nil) async throws -> WriteResult? {
        try await background {
            let edit = try self.edit(json, following: files)
            return try self.write(runsBodyOnce: false) { try $0.applyReplicated(edit, revisionsLimit: revisionsLimit) }
        }
    }

    /// The edit of document `json` with the attachments that follow in `files`.
    private func edit(_ json: String, following files: [URL]) throws -> DocumentEdit {
        do {
            guard case .object(var members) = try JSONValue(parsing: json) else {
                throw DocumentError(.badRequest, "Document must be a JSON object")
            }
            var following: [(name: String, contentType: String, revpos: Int?, encoding: String?, length: Int?)] = []
            if let index = members.firstIndex(where: { $0.key == "_attachments" }), case .object(let attachments) = members[index].value {
                var kept: [(key: String, value: JSONValue)] = []
                for (name, value) in attachments {
                    if value["follows"] == .bool(true) {
                        let length = value["length"]?.doubleValue.flatMap { $0 >= 0 && $0 < 1e15 ? Int($0) : nil }
                        following.append((name, value["content_type"]?.stringValue ?? AttachmentEdit.defaultContentType,
                                          try AttachmentEdit.revpos(value, name: name, id: nil), value["encoding"]?.stringValue, length))
                    } else {
                        kept.append((name, value))
                    }
                }
                members[index].value = .object(kept)
            }
            let id = members.first { $0.key == "_id" }?.value.stringValue
            guard following.count == files.count else {
                throw DocumentError(.badRequest, "\(following.count) attachments marked \"follows\" but \(files.count) attachment parts sent", id: id)
            }
            var text = JSONValue.object(members).exactJSONText
            var edit = try text.withUTF8 { try DocumentEdit(json: UnsafeRawBufferPointer($0), sizeLimits: self.options.sizeLimits) }
            var attachments = edit.attachments ?? []
            for (attachment, file) in zip(following, files) {
                try AttachmentEdit.validate(name: attachment.name, id: id)
                attachments.removeAll { $0.name == attachment.name }
                var following: AttachmentEdit
                switch attachment.encoding {
                case nil, "identity"?:
                    following = try AttachmentEdit(name: attachment.name, contentType: attachment.contentType, file: file)
                case "gzip"?:
                    // Kept gzip-encoded, as CouchDB keeps a part its replicator sends so: same bytes, same digest.
                    following = try AttachmentEdit(name: attachment.name, contentType: attachment.contentType, gzipFile: file,
                                                   length: attachment.length)
                case let encoding?:
                    throw DocumentError(.badRequest, "attachment \(attachment.name): encoding \(encoding) is not one Settee reads (gzip, identity)", id: id)
                }
                following.senderRevpos = attachment.revpos
                attachments.append(following)
            }
            edit.attachments = attachments
            return edit
        }
    }
}
