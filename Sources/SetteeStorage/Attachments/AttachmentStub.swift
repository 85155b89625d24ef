import Foundation
import SetteeCore

/// One attachment as a stored document holds it in `_attachments`: what it
/// is, never its bytes (CouchDB's stub). The bytes are stored once per
/// digest in ``AttachmentBodies``.
///
///     "name": {"content_type":"text/plain","revpos":2,"digest":"md5-…","length":5,"stub":true}
package struct AttachmentStub: Sendable, Equatable {
    package var name: String
    package var contentType: String
    /// The generation of the revision that wrote these bytes.
    package var revpos: Int
    /// The MD5 of the bytes (16 bytes).
    package var digest: [UInt8]
    /// The number of bytes.
    package var length: Int

    package init(name: String, contentType: String, revpos: Int, digest: [UInt8], length: Int) {
        self.name = name
        self.contentType = contentType
        self.revpos = revpos
        self.digest = digest
        self.length = length
    }

    /// CouchDB's form of the digest: `md5-` and the MD5 in base64.
    package var digestText: String { "md5-" + Data(digest).base64EncodedString() }

    /// Parses `digestText`; nil when it is not `md5-` and 16 bytes of base64.
    package static func digest(fromText text: String) -> [UInt8]? {
        guard text.hasPrefix("md5-"), let bytes = Data(base64Encoded: String(text.dropFirst(4))), bytes.count == 16 else { return nil }
        return Array(bytes)
    }

    /// Appends `"name":{…}`: the stub, or, with `data`, the attachment with its
    /// bytes in base64 as CouchDB returns it for `attachments=true`.
    package func appendJSON(data: [UInt8]? = nil, into out: inout [UInt8]) {
        JSONWriter.writeString(name, into: &out)
        out.append(contentsOf: #":{"content_type":"#.utf8)
        JSONWriter.writeString(contentType, into: &out)
        out.append(contentsOf: #","revpos":"#.utf8)
        JSONWriter.writeNumber(Double(revpos), into: &out)
        out.append(contentsOf: #","digest":""#.utf8)
        out.append(contentsOf: digestText.utf8)
        if let data {
            out.append(contentsOf: #"","data":""#.utf8)
            out.append(contentsOf: Data(data).base64EncodedString().utf8)
            out.append(contentsOf: #""}"#.utf8)
        } else {
            out.append(contentsOf: #"","length":"#.utf8)
            JSONWriter.writeNumber(Double(length), into: &out)
            out.append(contentsOf: #","stub":true}"#.utf8)
        }
    }

    /// The stubs a stored body's `_attachments` member holds, in order (none
    /// when it has no such member).
    package static func stubs(inBody body: UnsafeRawBufferPointer) throws -> [AttachmentStub] {
        guard let members = try? JSONObjectScanner.scan(body),
              let member = members.last(where: { $0.key == "_attachments" }) else { return [] }
        let value = try JSONParser.parse(UnsafeRawBufferPointer(rebasing: body[member.valueRange]))
        guard case .object(let entries) = value else { return [] }
        return entries.compactMap { entry in
            guard let contentType = entry.value["content_type"]?.stringValue,
                  let revpos = entry.value["revpos"]?.doubleValue,
                  let digest = entry.value["digest"]?.stringValue.flatMap(digest(fromText:)),
                  let length = entry.value["length"]?.doubleValue else { return nil }
            return AttachmentStub(name: entry.key, contentType: contentType, revpos: Int(revpos), digest: digest, length: Int(length))
        }
    }

    /// `body` (a JSON object) without its `_attachments` member.
    package static func bodyWithoutAttachments(_ body: UnsafeRawBufferPointer) -> [UInt8] {
        guard let members = try? JSONObjectScanner.scan(body), members.contains(where: { $0.key == "_attachments" }) else {
            return Array(body)
        }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for member in members where member.key != "_attachments" {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: body[member.keyRange])
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: body[member.valueRange])
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `body` (a JSON object without `_attachments`) with `_attachments`
    /// holding `stubs` as its last member; `body` itself when there are none.
    package static func body(_ body: [UInt8], adding stubs: [AttachmentStub]) -> [UInt8] {
        guard !stubs.isEmpty else { return body }
        var out = body
        out.removeLast()
        if out.count > 1 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: #""_attachments":{"#.utf8)
        for (index, stub) in stubs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            stub.appendJSON(into: &out)
        }
        out.append(contentsOf: "}}".utf8)
        return out
    }
}
