import SetteeCore
/// A document revision in CouchDB's form `N-<id>`: a generation that counts
/// the edits, and the id of the edit — 32 hex digits (16 bytes) for every
/// revision Settee or CouchDB makes, any other text for revisions another
/// program made (CouchDB accepts any `N-string`).
public struct Revision: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    public var generation: UInt32
    /// The revision id's bytes: 16 for a hexadecimal id, else the id's own
    /// text (as CouchDB keeps a revision id: `couch_doc:parse_revid`).
    public var hash: [UInt8]

    /// The longest revision id kept in its own text (a 32-hex-digit id is 16 bytes).
    package static let maximumTextLength = 200

    public init(generation: UInt32, hash: [UInt8]) {
        self.generation = generation
        self.hash = hash
    }

    /// Parses `N-<32 hex digits>`, `N-<other id>` (printable ASCII other
    /// than quotes and backslashes, at most 200 characters), or a local
    /// document's `0-N`; nil when the text is not a revision.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        if utf8.count > 2, utf8[0] == UInt8(ascii: "0"), utf8[1] == UInt8(ascii: "-") {
            guard let number = UInt64(String(decoding: utf8[2...], as: UTF8.self)) else { return nil }
            self.init(local: number)
            return
        }
        guard let dash = utf8.firstIndex(of: UInt8(ascii: "-")), dash > 0, dash <= 10,
              utf8[..<dash].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let generation = UInt32(String(decoding: utf8[..<dash], as: UTF8.self)), generation > 0,
              let hash = Self.hash(ofID: utf8[(dash + 1)...])
        else { return nil }
        self.init(generation: generation, hash: hash)
    }

    /// The bytes of the revision id `id` (what follows `N-`): 16 for 32 hex
    /// digits, else the text itself; nil for an empty id, 32 characters that
    /// are not hexadecimal (CouchDB: "Invalid rev format"), or an id with
    /// characters a revision cannot hold here.
    package static func hash(ofID id: ArraySlice<UInt8>) -> [UInt8]? {
        guard !id.isEmpty, id.count <= maximumTextLength else { return nil }
        if id.count == 32 {
            var hash: [UInt8] = []
            hash.reserveCapacity(16)
            var index = id.startIndex
            while index < id.endIndex {
                guard let high = JSONLexer.hexValue(id[index]), let low = JSONLexer.hexValue(id[index + 1]) else { return nil }
                hash.append(UInt8(high << 4 | low))
                index += 2
            }
            return hash
        }
        guard id.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) else { return nil }
        return Array(id)
    }

    /// Appends the id's bytes preceded by their count (u8): how storage
    /// writes an id that is not 16 bytes (parsing holds it to
    /// ``maximumTextLength``; the count is of what is written).
    package func appendHashWithLength(to out: inout [UInt8]) {
        let stored = hash.prefix(255)
        out.append(UInt8(stored.count))
        out.append(contentsOf: stored)
    }

    /// The revision id as text, what follows `N-` (an entry of
    /// `_revisions.ids`): 32 hex digits for 16 bytes, else the bytes' text
    /// (CouchDB's `revid_to_str`).
    public var idText: String {
        hash.count == 16 ? hash.hexString : String(decoding: hash, as: UTF8.self)
    }

    public var description: String {
        isLocal ? "0-\(localNumber)" : "\(generation)-\(idText)"
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
        hash.suffix(8).reduce(0) { $0 << 8 | UInt64($1) }
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

/// A revision codes as its text, `N-<id>`: a model may hold its
/// `_rev` as a ``Revision`` or as a `String`.
extension Revision: Codable {
    /// Decodes the text of a revision.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let revision = Revision(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not a revision (N-<id>)")
        }
        self = revision
    }

    /// Encodes the revision as its text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
