import SetteeCore
/// A document revision in CouchDB's form `N-<32 hex digits>`: a generation
/// that counts the edits, and a hash of the edit.
public struct Revision: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    public var generation: UInt32
    /// 16 bytes.
    public var hash: [UInt8]

    public init(generation: UInt32, hash: [UInt8]) {
        precondition(hash.count == 16, "A revision hash has 16 bytes.")
        self.generation = generation
        self.hash = hash
    }

    /// Parses `N-<32 hex digits>`, or a local document's `0-N`; nil when the
    /// text is not a revision.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        if utf8.count > 2, utf8[0] == UInt8(ascii: "0"), utf8[1] == UInt8(ascii: "-") {
            guard let number = UInt64(String(decoding: utf8[2...], as: UTF8.self)) else { return nil }
            self.init(local: number)
            return
        }
        guard let dash = utf8.firstIndex(of: UInt8(ascii: "-")), dash > 0, dash <= 10,
              utf8.count - dash - 1 == 32,
              let generation = UInt32(String(decoding: utf8[..<dash], as: UTF8.self)), generation > 0
        else { return nil }
        var hash: [UInt8] = []
        hash.reserveCapacity(16)
        var index = dash + 1
        while index < utf8.count {
            guard let high = JSONLexer.hexValue(utf8[index]), let low = JSONLexer.hexValue(utf8[index + 1]) else { return nil }
            hash.append(UInt8(high << 4 | low))
            index += 2
        }
        self.init(generation: generation, hash: hash)
    }

    public var description: String {
        isLocal ? "0-\(localNumber)" : "\(generation)-\(hash.hexString)"
    }

    /// A `_local/` document's revision `0-N`: generation 0, and `N` (which
    /// counts its writes) in the hash's last eight bytes, big-endian.
    package init(local number: UInt64) {
        var hash = [UInt8](repeating: 0, count: 8)
        withUnsafeBytes(of: number.bigEndian) { hash.append(contentsOf: $0) }
        self.init(generation: 0, hash: hash)
    }

    /// Whether this is a `_local/` document's revision (`0-N`).
    public var isLocal: Bool { generation == 0 }

    /// `N` of a local revision `0-N`.
    package var localNumber: UInt64 {
        hash[8...].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The revision that follows this one (or the first, after `nil`) for an
    /// edit of `body` (a JSON object of the members other than CouchDB's
    /// special ones) with the attachments whose term is `attachmentsTerm`
    /// (``ErlangExternalTerm/attachments(_:)``): CouchDB's `new_revid`
    /// (``RevisionHash``), so the same edit gets the same revision id as in
    /// CouchDB. It needs no transaction, so bulk imports compute it in parallel.
    package static func next(after previous: Revision?, deleted: Bool, body: [UInt8], attachmentsTerm: [UInt8]? = nil) -> Revision {
        let hash = RevisionHash.of(deleted: deleted, previous: previous, body: body, attachmentsTerm: attachmentsTerm)
        return Revision(generation: (previous?.generation ?? 0) + 1, hash: hash)
    }
}

/// A revision codes as its text, `N-<32 hex digits>`: a model may hold its
/// `_rev` as a ``Revision`` or as a `String`.
extension Revision: Codable {
    /// Decodes the text of a revision.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let revision = Revision(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not a revision (N-<32 hex digits>)")
        }
        self = revision
    }

    /// Encodes the revision as its text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
