import CSetteeLMDB
import SetteeCore
import Logging

/// How many documents a database holds: CouchDB's `doc_count` (live
/// documents, design documents included) and `doc_del_count` (tombstones).
/// Also what a transaction's writes change them by (then either may be negative).
package struct DocumentCounts: Equatable, Sendable {
    package var live = 0
    package var deleted = 0

    package init(live: Int = 0, deleted: Int = 0) {
        self.live = live
        self.deleted = deleted
    }

    /// Counts one written revision: `wasDeleted` says what the document was
    /// before (nil: it did not exist), `isDeleted` what it is now. A live
    /// document becoming a tombstone moves one from `live` to `deleted`;
    /// re-creating a deleted one, the reverse.
    package mutating func countWrite(wasDeleted: Bool?, isDeleted: Bool) {
        switch wasDeleted {
        case nil: break
        case false?: live -= 1
        case true?: deleted -= 1
        }
        if isDeleted { deleted += 1 } else { live += 1 }
    }

    package static func + (counts: DocumentCounts, change: DocumentCounts) -> DocumentCounts {
        DocumentCounts(live: counts.live + change.live, deleted: counts.deleted + change.deleted)
    }
}

/// The document counts a database keeps, so that `info` and `_all_docs`'
/// `total_rows` read one small record instead of every document.
///
/// Stored as `{"doc_count":N,"doc_del_count":M,"update_seq":S}` under the key
/// `counts` in the table `settee` (beside the format record), and rewritten in
/// the transaction of every document write, so a crash can never leave them
/// apart from the documents. `update_seq` is the sequence of the last write
/// they count: a Settee from before the record writes documents without
/// updating it, and moves the sequence past it; the record is then unknown,
/// and the documents are counted again (see ``DocumentStore/keptCounts(in:)``).
package struct KeptDocumentCounts: Equatable, Sendable {
    package var counts: DocumentCounts
    /// The sequence number of the last write the counts include.
    package var sequence: UInt64

    package static let key = Array("counts".utf8)

    /// The record's bytes.
    package var record: [UInt8] {
        var bytes: [UInt8] = []
        JSONWriter.write(["doc_count": .number(Double(counts.live)), "doc_del_count": .number(Double(counts.deleted)),
                          "update_seq": .number(Double(sequence))], into: &bytes)
        return bytes
    }

    package init(counts: DocumentCounts, sequence: UInt64) {
        self.counts = counts
        self.sequence = sequence
    }

    /// Decodes a record; nil when it is not one (damaged, or not written by Settee).
    package init?(record: UnsafeRawBufferPointer) {
        guard let value = try? JSONParser.parse(record),
              let live = Self.count(value["doc_count"]), let deleted = Self.count(value["doc_del_count"]),
              let sequence = Self.count(value["update_seq"]) else { return nil }
        self.init(counts: DocumentCounts(live: live, deleted: deleted), sequence: UInt64(sequence))
    }

    /// A whole, non-negative number, exactly as stored (JSON numbers are doubles: exact up to 2⁵³).
    private static func count(_ value: JSONValue?) -> Int? {
        guard let number = value?.doubleValue, number >= 0, number <= 9_007_199_254_740_992, number == number.rounded() else { return nil }
        return Int(number)
    }
}

extension DocumentStore {
    /// The kept counts, when they count every write up to the latest: nil
    /// when the record is missing (a database from an earlier Settee, or one
    /// opened read-only that no Settee with counts has written), was left
    /// behind by writes that did not update it, or does not decode.
    package func keptCounts(in transaction: LMDBTransaction) throws -> DocumentCounts? {
        guard let kept = try keptRecord(in: transaction) else { return nil }
        return kept.sequence == (try lastSequence(in: transaction)) ? kept.counts : nil
    }

    /// The record as stored, whatever write it counts up to; nil when missing or undecodable.
    package func keptRecord(in transaction: LMDBTransaction) throws -> KeptDocumentCounts? {
        guard let metadata, let bytes = try transaction.get(metadata, KeptDocumentCounts.key) else { return nil }
        return KeptDocumentCounts(record: bytes)
    }

    /// The record's bytes as stored, for ``Database/verify()``.
    package func keptRecordBytes(in transaction: LMDBTransaction) throws -> [UInt8]? {
        guard let metadata else { return nil }
        return try transaction.get(metadata, KeptDocumentCounts.key).map(Array.init)
    }

    /// Live documents and tombstones: the kept counts, or, while there are
    /// none (see ``keptCounts(in:)``), counted from the documents.
    package func counts(in transaction: LMDBTransaction) throws -> DocumentCounts {
        try keptCounts(in: transaction) ?? scannedCounts(in: transaction)
    }

    /// Live documents and tombstones, counted by reading every document record.
    package func scannedCounts(in transaction: LMDBTransaction) throws -> DocumentCounts {
        var counts = DocumentCounts()
        try transaction.withCursor(docs) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                if try DocumentRecord(bytes: value, id: key, path: environment.path).isDeleted { counts.deleted += 1 } else { counts.live += 1 }
                entry = try cursor.next()
            }
        }
        return counts
    }

    /// Rewrites the kept counts at the end of a write transaction whose writes
    /// moved the sequence from `before` to `sequence` and changed the counts by
    /// `change`. Counts that did not count every write up to `before` are
    /// replaced by counting the documents, the transaction's writes included.
    package func keepCounts(changedBy change: DocumentCounts, from before: UInt64, to sequence: UInt64, in transaction: LMDBTransaction) throws {
        // Only a read-only database lacks the table, and it is never written.
        guard let metadata else { return }
        let counts: DocumentCounts
        if let kept = try keptRecord(in: transaction), kept.sequence == before {
            counts = kept.counts + change
        } else {
            counts = try scannedCounts(in: transaction)
        }
        try transaction.put(metadata, KeptDocumentCounts.key, KeptDocumentCounts(counts: counts, sequence: sequence).record)
    }

    /// Counts the documents of a database that has no (current) kept counts,
    /// once, and keeps them: called at open. Until it succeeds, counts are
    /// counted from the documents where they are needed, and the next write
    /// keeps them.
    package func keepCountsIfUnknown() {
        guard !environment.isReadOnly, metadata != nil else { return }
        do {
            if try environment.read({ try keptCounts(in: $0) }) != nil { return }
            try environment.write { transaction in
                // Another process may have counted them meanwhile.
                guard try keptCounts(in: transaction) == nil, let metadata else { return }
                let kept = KeptDocumentCounts(counts: try scannedCounts(in: transaction), sequence: try lastSequence(in: transaction))
                try transaction.put(metadata, KeptDocumentCounts.key, kept.record)
            }
            logger.info("counted the documents of a database without kept counts", metadata: ["path": "\(environment.path)"])
        } catch {
            // A write lock held elsewhere, or a damaged record: opening goes on, and the counts are counted where needed.
            logger.info("the documents could not be counted at open; they are counted where needed until a write keeps them",
                        metadata: ["path": "\(environment.path)", "error": "\(error)"])
        }
    }
}
