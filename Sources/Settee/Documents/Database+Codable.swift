import Foundation

/// Documents as the caller's `Codable` types.
///
/// A value is stored as the JSON object its `Encodable` conformance writes
/// (dates as ISO 8601 text), with `_id` (and `_rev`, when updating) added.
/// Reading decodes the whole document, `_id` and `_rev` included, so a type
/// may declare them to keep track of its revision:
///
/// ```swift
/// struct Contact: Codable {
///     var _rev: String?
///     var name: String
///     var city: String
/// }
/// try db.put(Contact(name: "Ann", city: "Oslo"), id: "ann")
/// var ann = try db.get("ann", as: Contact.self)!
/// ann.city = "Bergen"
/// try db.put(ann, id: "ann")                    // its _rev says which revision it updates
/// ```
extension Database {
    /// Writes `value` as the document `id`.
    ///
    /// - Parameters:
    ///   - value: The document's content; it must encode as a JSON object.
    ///   - id: The document's `_id`.
    ///   - revision: The revision this write replaces; `nil` when creating the
    ///     document, or when `value` encodes its own `_rev`.
    /// - Throws: ``CodingError`` (``SetteeErrorCode/encodingFailed``) when the
    ///   value does not encode as a JSON object; ``DocumentError`` for a bad id
    ///   or a conflict.
    @discardableResult
    public func put(_ value: some Encodable, id: String, revision: Revision? = nil) throws -> WriteResult {
        try write(try DocumentEdit(value, id: id, revision: revision, sizeLimits: options.sizeLimits))
    }

    /// The document `id` decoded as `T`, or nil when there is none or it was deleted.
    ///
    /// - Throws: ``CodingError`` (``SetteeErrorCode/decodingFailed``) naming
    ///   the document and the member that does not fit `T`.
    public func get<T: Decodable>(_ id: String, as type: T.Type = T.self) throws -> T? {
        try document(id)?.decoded(as: T.self)
    }

}

extension DocumentEdit {
    /// The edit that writes `value` as the document `id`.
    init(_ value: some Encodable, id: String, revision: Revision?, sizeLimits: DocumentSizeLimits) throws {
        let json = try Self.documentJSON(value, id: id, revision: revision)
        self = try json.withUnsafeBytes { try DocumentEdit(json: $0, sizeLimits: sizeLimits) }
        guard self.id == id else {
            throw DocumentError(.badRequest, "the value's _id \"\(self.id ?? "")\" is not the id it is written under", id: id)
        }
    }

    /// `{"_id":…,"_rev":…` followed by the members `value` encodes.
    static func documentJSON(_ value: some Encodable, id: String, revision: Revision?) throws -> [UInt8] {
        let encoded = try CodingError.encode(value, subject: "document \"\(id)\"")
        guard let start = encoded.firstIndex(where: { !isJSONWhitespace($0) }), encoded[start] == UInt8(ascii: "{") else {
            throw CodingError(errorCode: .encodingFailed, subject: "document \"\(id)\"", type: "\(type(of: value))", path: "",
                              reason: "a document must encode as a JSON object (a keyed container)")
        }
        var json: [UInt8] = Array(#"{"_id":"#.utf8)
        JSONWriter.writeString(id, into: &json)
        if let revision {
            json.append(contentsOf: #","_rev":"#.utf8)
            JSONWriter.writeString(revision.description, into: &json)
        }
        let members = encoded[(start + 1)...]
        if members.first(where: { !isJSONWhitespace($0) }) != UInt8(ascii: "}") { json.append(UInt8(ascii: ",")) }
        json.append(contentsOf: members)
        return json
    }
}

extension Document {
    /// The whole document (`_id` and `_rev` included) decoded as `T`.
    ///
    /// - Throws: ``CodingError`` naming the document and the member that does not fit `T`.
    public func decoded<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try CodingError.decode(T.self, from: jsonBytes, subject: "document \"\(id)\"")
    }
}
