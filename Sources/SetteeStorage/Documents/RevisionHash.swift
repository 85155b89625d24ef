import SetteeCore

/// CouchDB's revision id for an edit (`couch_db:new_revid/1`): the MD5 of
/// `term_to_binary([Deleted, OldStart, OldRev, Body, Atts], [{minor_version, 1}])`,
/// where `OldStart` and `OldRev` are the generation and hash of the
/// revision the edit follows (`0` and `0` for a new document), `Body` the
/// members other than `_id`, `_rev` and the rest of CouchDB's special ones
/// (a deletion's too), as ``ErlangExternalTerm`` writes them, and `Atts`
/// the attachments' names, types and digests
/// (``ErlangExternalTerm/attachments(_:)``). The term is written into one
/// buffer and hashed in one pass: nothing of it is kept.
package enum RevisionHash {
    /// The 16 bytes of the revision id of an edit of `body` (a JSON object).
    package static func of(deleted: Bool, previous: Revision?, body: [UInt8], attachmentsTerm: [UInt8]? = nil) -> [UInt8] {
        if let hash = ofUniqueKeys(deleted: deleted, previous: previous, body: body, attachmentsTerm: attachmentsTerm) {
            return hash
        }
        return hash(deleted: deleted, previous: previous, body: JSONDuplicateKeys.removed(from: body),
                    attachmentsTerm: attachmentsTerm, uniqueKeys: false)!
    }

    /// The revision id's bytes as ``of(deleted:previous:body:attachmentsTerm:)``
    /// makes them, or nil when an object in `body` has a key twice (its
    /// revision id is then that of the body without them:
    /// ``JSONDuplicateKeys/removed(from:)``).
    package static func ofUniqueKeys(deleted: Bool, previous: Revision?, body: [UInt8], attachmentsTerm: [UInt8]?) -> [UInt8]? {
        hash(deleted: deleted, previous: previous, body: body, attachmentsTerm: attachmentsTerm, uniqueKeys: true)
    }

    /// The hash; with `uniqueKeys`, nil when `body` has a key twice.
    private static func hash(deleted: Bool, previous: Revision?, body: [UInt8], attachmentsTerm: [UInt8]?, uniqueKeys: Bool) -> [UInt8]? {
        var buffer = TermBuffer(capacity: body.count + body.count / 2 + (attachmentsTerm?.count ?? 1) + 64)
        buffer.reserve(32)
        buffer.append(ErlangExternalTerm.version)
        buffer.append(ErlangExternalTerm.list)
        buffer.appendUInt32(5)
        buffer.appendAtom(deleted ? "true" : "false")
        buffer.appendInteger(magnitude: UInt64(previous?.generation ?? 0), negative: false)
        if let previous {
            buffer.appendBinary(previous.hash)
        } else {
            buffer.append(ErlangExternalTerm.smallInteger)
            buffer.append(0)
        }
        let unique = body.withUnsafeBytes { ErlangExternalTerm.write(json: $0, into: &buffer) }
        if uniqueKeys && !unique { return nil }
        if let attachmentsTerm {
            attachmentsTerm.withUnsafeBufferPointer { if let start = $0.baseAddress { buffer.append(start, count: $0.count) } }
        } else {
            buffer.reserve(1)
            buffer.append(ErlangExternalTerm.nil_)
        }
        buffer.reserve(1)
        buffer.append(ErlangExternalTerm.nil_)
        return MD5.hash(buffer.bytes)
    }
}
