import Foundation
public import SetteeCore

extension DocumentEdit {
    /// The edit that writes `value`, encoded as `coding` says.
    ///
    /// - Parameters:
    ///   - id: The document's `_id`; nil for the value's own (a
    ///     ``DocumentModel``'s ``DocumentModel/id``, or the `_id` it encodes),
    ///     and without one, an id generated when it is written.
    ///   - revision: The revision the write replaces; nil for the value's own.
    package init(_ value: some Encodable, id: String?, revision: Revision?, coding: DocumentCoding, sizeLimits: DocumentSizeLimits) throws {
        let json = try Self.documentJSON(value, id: id, revision: revision, coding: coding)
        self = try json.withUnsafeBytes { try DocumentEdit(json: $0, sizeLimits: sizeLimits) }
    }

    /// `{"_id":…,"_rev":…` followed by the other members `value` encodes.
    ///
    /// A `String` is taken as the JSON text of the document, as
    /// `Database.put(_:)` takes it. A ``DocumentModel``'s members `id` and
    /// `revision` are its identity, written as `_id` and `_rev` only.
    package static func documentJSON(_ value: some Encodable, id: String?, revision: Revision?, coding: DocumentCoding) throws -> [UInt8] {
        let model = value as? any DocumentModel
        let subject = (id ?? model?.id).map { "document \"\($0)\"" } ?? "a new document"
        let text = value as? String
        let encoded = try text.map { Array($0.utf8) } ?? Array(CodingError.encode(value, coding: coding, subject: subject))
        let members: [JSONObjectMember]
        do {
            members = try encoded.withUnsafeBytes { try JSONObjectScanner.scan($0) }
        } catch let error as JSONScanError {
            switch error {
            case .notAnObject where text == nil:
                throw CodingError(errorCode: .encodingFailed, subject: subject, type: "\(type(of: value))", path: "",
                                  reason: "a document must encode as a JSON object (a keyed container)")
            case .notAnObject: throw DocumentError(.badRequest, "Document must be a JSON object", id: id)
            case .malformed(let error): throw DocumentError(.badRequest, "invalid JSON: \(error)", id: id)
            }
        }
        var ownID = model?.id
        var ownRevision = model?.revision
        var body: [UInt8] = []
        for member in members {
            switch member.key {
            case "_id":
                ownID = try encoded.withUnsafeBytes { try DocumentEdit.validID(UnsafeRawBufferPointer(rebasing: $0[member.valueRange])) }
                continue
            case "_rev":
                guard case .string(let text)? = try? JSONParser.parse(encoded[member.valueRange]), let parsed = Revision(text) else {
                    throw DocumentError(.badRequest, "Invalid rev format", id: id ?? ownID)
                }
                ownRevision = ownRevision ?? parsed
                continue
            case "id" where model != nil, "revision" where model != nil:
                // A DocumentModel's identity is its _id and _rev, not members of the body.
                continue
            default:
                body.append(UInt8(ascii: ","))
                body.append(contentsOf: encoded[member.keyRange.lowerBound..<member.valueRange.upperBound])
            }
        }
        if let id, let ownID, ownID != id {
            throw DocumentError(.badRequest, "the value's _id \"\(ownID)\" is not the id it is written under", id: id)
        }
        var json: [UInt8] = [UInt8(ascii: "{")]
        if let id = id ?? ownID {
            json.append(contentsOf: #""_id":"#.utf8)
            JSONWriter.writeString(id, into: &json)
            json.append(UInt8(ascii: ","))
        }
        if let revision = revision ?? ownRevision {
            json.append(contentsOf: #""_rev":"#.utf8)
            JSONWriter.writeString(revision.description, into: &json)
            json.append(UInt8(ascii: ","))
        }
        if body.isEmpty {
            if json.count > 1 { json.removeLast() }
        } else {
            json.append(contentsOf: body.dropFirst())
        }
        json.append(UInt8(ascii: "}"))
        return json
    }
}

extension DocumentEdit {
    /// The id of a document given as a model, which must have one to be deleted.
    package static func id(of document: some DocumentModel) throws(DocumentError) -> String {
        guard let id = document.id else {
            throw DocumentError(.badRequest, "a \(type(of: document)) without an id has no document to delete")
        }
        return id
    }
}

extension Document {
    /// The whole document (`_id` and `_rev` included) decoded as `T`, as
    /// `coding` says; a ``DocumentModel`` gets the document's id and revision.
    ///
    /// - Throws: ``CodingError`` naming the document and the member that does not fit `T`.
    public func decoded<T: Decodable>(as type: T.Type = T.self, coding: DocumentCoding = .standard) throws -> T {
        try Self.decode(T.self, from: jsonBytes, id: id, revision: revision, coding: coding)
    }

    /// The document `id` at `revision`, whose whole JSON is `json`, decoded as `T`.
    package static func decode<T: Decodable>(_ type: T.Type, from json: [UInt8], id: String, revision: Revision,
                                             coding: DocumentCoding) throws -> T {
        let value = try CodingError.decode(T.self, from: json, coding: coding, subject: "document \"\(id)\"")
        guard var model = value as? any DocumentModel else { return value }
        model.id = id
        model.revision = revision
        return model as! T
    }

    /// The whole document `json` (as a view row includes it, as `find`
    /// finds it) decoded as `T`; a ``DocumentModel`` gets the `_id` and `_rev`
    /// the JSON holds (neither when `find`'s `fields` left them out).
    package static func decode<T: Decodable>(_ type: T.Type, from json: [UInt8], coding: DocumentCoding,
                                             subject: @autoclosure () -> String) throws -> T {
        let value = try CodingError.decode(T.self, from: json, coding: coding, subject: subject())
        guard var model = value as? any DocumentModel,
              let identity = try? CodingError.decode(Identity.self, from: json, subject: subject()) else { return value }
        model.id = identity._id
        model.revision = identity._rev
        return model as! T
    }

    /// What identifies a stored document.
    private struct Identity: Decodable {
        var _id: String
        var _rev: Revision
    }
}
