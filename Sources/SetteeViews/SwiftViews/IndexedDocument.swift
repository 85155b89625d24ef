import Foundation
public import SetteeCore

/// A document as an ``Indexer``'s map function sees it: its stored JSON
/// (with `_id` and `_rev`), read only as far as the map asks. Where each
/// member's key and value lie is found in one pass that builds nothing; a
/// member is built alone when read (``subscript(_:)``); ``json`` and
/// ``decode(_:)`` read it whole.
public struct IndexedDocument: Sendable {
    /// The batch of documents' JSON this one is part of (shared, not copied).
    private let storage: [UInt8]
    private let range: Range<Int>
    /// Five numbers per top-level member (see `JSONObjectScanner.memberTable(of:into:)`),
    /// relative to `range`.
    private let members: [Int32]
    /// The document's id.
    public let id: String
    /// The database sequence of the document's change being indexed.
    public let sequence: UInt64

    package init(storage: [UInt8], range: Range<Int>, members: [Int32], id: String, sequence: UInt64) {
        self.storage = storage
        self.range = range
        self.members = members
        self.id = id
        self.sequence = sequence
    }

    /// Calls `body` with the document's JSON text (UTF-8), valid only during the call.
    public func withJSONBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// The value of the top-level member `key` (`_id` and `_rev` included), or
    /// nil when the document has none. Only this member is built.
    public subscript(key: String) -> JSONValue? {
        var key = key
        return key.withUTF8 { name in
            withJSONBytes { json in
                // The last member of the name, as `JSON.parse` keeps it.
                var member = members.count - 5
                while member >= 0 {
                    let start = Int(members[member]), end = Int(members[member + 1])
                    let matches = members[member + 2] == 0
                        ? end - start == name.count && json[start..<end].elementsEqual(UnsafeRawBufferPointer(name))
                        : JSONObjectScanner.decodedKey(in: json, from: start, to: end).utf8.elementsEqual(name)
                    if matches {
                        // A stored document is valid JSON: this does not fail.
                        return try? JSONParser.parse(UnsafeRawBufferPointer(rebasing: json[Int(members[member + 3])..<Int(members[member + 4])]))
                    }
                    member -= 5
                }
                return nil
            }
        }
    }

    /// The document's revision (`_rev`).
    public var revision: String { self["_rev"]?.stringValue ?? "" }

    /// The whole document, built as a tree.
    public var json: JSONValue {
        get throws { try withJSONBytes { bytes throws(JSONParseError) in try JSONParser.parse(bytes) } }
    }

    /// The document's JSON text.
    public var jsonText: String { withJSONBytes { String(decoding: $0, as: UTF8.self) } }

    /// The document decoded as a `Decodable` type (with `JSONDecoder`'s default
    /// strategies), its `_id` and `_rev` included for a type that has them.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: withJSONBytes { Data($0) })
    }
}
