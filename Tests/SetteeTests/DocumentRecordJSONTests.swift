import Foundation
import Testing
@testable import SetteeStorage

/// A stored record read as map functions see it (`{"_id":…,"_rev":…,…}`):
/// the record's own writer gives the same text as the one built from its
/// parts, for every kind of revision, id and body.
@Suite("Document records as JSON")
struct DocumentRecordJSONTests {
    /// The record's text through ``DocumentRecord/appendFullJSON(id:into:)``, after `prefix`.
    func recordJSON(id: String, revision: Revision, deleted: Bool, body: String, after prefix: [UInt8] = []) throws -> [UInt8] {
        var record: [UInt8] = []
        Array(body.utf8).withUnsafeBytes { body in
            DocumentRecord.encode(sequence: 7, revision: revision, deleted: deleted, body: body, into: &record)
        }
        var out = prefix
        try record.withUnsafeBytes { bytes in
            let parsed = try DocumentRecord(bytes: bytes, id: Array(id.utf8), path: "")
            Array(id.utf8).withUnsafeBytes { parsed.appendFullJSON(id: $0, into: &out) }
        }
        return out
    }

    @Test("every generation, id and body gives the text built from its parts", arguments: [
        UInt32(1), 9, 10, 99, 100, 123_456_789, UInt32.max,
    ])
    func sameText(generation: UInt32) throws {
        let hash: [UInt8] = (0..<16).map { UInt8($0 * 17) }
        let revision = Revision(generation: generation, hash: hash)
        for id in ["d", "doc00000001", "quote\"back\\slash", "tab\tnew\nline", "ünïcødé", "_design/x", String(repeating: "long", count: 100)] {
            for body in [#"{}"#, #"{"a":1}"#, #"{"type":"order","items":[{"sku":"x"}],"note":"é"}"#] {
                for deleted in [false, true] {
                    let expected = DocumentRecord.fullJSON(id: id, revision: revision, deleted: deleted, body: Array(body.utf8))
                    #expect(try recordJSON(id: id, revision: revision, deleted: deleted, body: body) == expected)
                }
            }
        }
        // The text of the whole document, as JSON reads it.
        let text = try recordJSON(id: "d", revision: revision, deleted: false, body: #"{"a":[1,2]}"#)
        let expectedRevision = "\(generation)-" + hash.map { String(format: "%02x", $0) }.joined()
        #expect(String(decoding: text, as: UTF8.self) == #"{"_id":"d","_rev":"\#(expectedRevision)","a":[1,2]}"#)
    }

    @Test("appends after what the buffer holds, growing it as needed")
    func appendsAfter() throws {
        let revision = Revision(generation: 3, hash: Array(repeating: 0xAB, count: 16))
        var buffer: [UInt8] = []
        var expected: [UInt8] = []
        for index in 0..<200 {
            let body = #"{"n":\#(index),"pad":"\#(String(repeating: "x", count: index))"}"#
            buffer = try recordJSON(id: "doc\(index)", revision: revision, deleted: index % 7 == 0, body: body, after: buffer)
            expected += DocumentRecord.fullJSON(id: "doc\(index)", revision: revision, deleted: index % 7 == 0, body: Array(body.utf8))
        }
        #expect(buffer == expected)
    }

    @Test("a local document's revision 0-N takes the general path")
    func localRevision() throws {
        let revision = try #require(Revision("0-12"))
        #expect(try recordJSON(id: "_local/x", revision: revision, deleted: false, body: #"{"a":1}"#)
                == DocumentRecord.fullJSON(id: "_local/x", revision: revision, deleted: false, body: Array(#"{"a":1}"#.utf8)))
    }
}
