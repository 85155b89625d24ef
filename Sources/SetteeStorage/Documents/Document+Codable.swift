import Foundation
import SetteeCore

extension DocumentEdit {
    /// The edit that writes `value` as the document `id`.
    package init(_ value: some Encodable, id: String, revision: Revision?, sizeLimits: DocumentSizeLimits) throws {
        let json = try Self.documentJSON(value, id: id, revision: revision)
        self = try json.withUnsafeBytes { try DocumentEdit(json: $0, sizeLimits: sizeLimits) }
        guard self.id == id else {
            throw DocumentError(.badRequest, "the value's _id \"\(self.id ?? "")\" is not the id it is written under", id: id)
        }
    }

    /// `{"_id":…,"_rev":…` followed by the members `value` encodes.
    package static func documentJSON(_ value: some Encodable, id: String, revision: Revision?) throws -> [UInt8] {
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
