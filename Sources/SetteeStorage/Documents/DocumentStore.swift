import CSetteeLMDB
import Foundation
package import Logging
import SetteeCore
import Synchronization

/// Documents in LMDB: the current revision of each document, and the changes
/// feed (one entry per document, at the sequence number of its latest write).
///
/// Tables: `docs` (id → ``DocumentRecord``) and `seqs` (big-endian u64 → id);
/// the counts of documents are kept in the table `settee` (``KeptDocumentCounts``).
package final class DocumentStore: Sendable {
    package let environment: LMDBEnvironment
    package let docs: LMDBTable
    package let seqs: LMDBTable
    /// The table `settee`, which holds the kept counts; nil only in a database
    /// from before the format record, opened read-only (see ``DatabaseFormat``).
    package let metadata: LMDBTable?
    package let logger: Logger
    /// Signalled after every committed write, for live queries and changes feeds.
    package let commits: CommitSignal
    /// The largest documents and design documents written.
    package let sizeLimits: DocumentSizeLimits
    private let ids = DocumentIDGenerator()
    /// The bodies of attachments, by digest; nil only in a database opened
    /// read-only that never stored one.
    package let attachmentBodies: AttachmentBodies?
    /// Checks each edit before it is written (design documents' `validate_doc_update`).
    package let validation: (any DocumentWriteValidation)?
    /// `_local/` documents (``localRecord(_:in:)``), the purge log
    /// (``purge(_:onlyExpired:)``) and expirations by id and by time
    /// (``setExpiration(_:for:)``); nil only in a database from before them,
    /// opened read-only.
    package let local: LMDBTable?
    package let purges: LMDBTable?
    package let expirations: LMDBTable?
    package let expirationTimes: LMDBTable?
    /// Revision trees of the documents that have one (``RevisionTree``).
    package let revisionTrees: LMDBTable?
    /// The bodies of earlier revisions (``keepEarlier(_:_:record:in:)``).
    package let earlierRevisions: LMDBTable?
    /// Whether an edit keeps the body of the leaf it replaces until
    /// ``compactEarlierRevisions()``, as CouchDB keeps them until compaction.
    package let keepsEarlierRevisions: Bool
    /// `_revs_limit` as the latest write transaction read it, by that
    /// transaction's id (``revisionsLimit(inWrite:)``).
    let writtenRevisionsLimit = Mutex<(transaction: Int, limit: Int)?>(nil)

    package init(environment: LMDBEnvironment, logger: Logger, validation: (any DocumentWriteValidation)? = nil, sizeLimits: DocumentSizeLimits,
                 keepsEarlierRevisions: Bool = false) throws {
        self.environment = environment
        self.keepsEarlierRevisions = keepsEarlierRevisions
        self.logger = logger
        self.validation = validation
        self.sizeLimits = sizeLimits
        let tables = try environment.openDatabases(["docs", "seqs"])
        docs = tables[0]
        seqs = tables[1]
        let hasMetadata = try !environment.isReadOnly || environment.tableNames().contains(DatabaseFormat.table)
        metadata = hasMetadata ? try environment.openDatabases([DatabaseFormat.table])[0] : nil
        attachmentBodies = try AttachmentBodies(environment: environment)
        let optional = try Self.openOptionalTables(environment)
        (local, purges, expirations, expirationTimes) = (optional[0], optional[1], optional[2], optional[3])
        revisionTrees = optional[4]
        earlierRevisions = optional[5]
        let seqs = seqs
        commits = try CommitSignal.shared(environment: environment) { transaction in
            try transaction.withCursor(seqs) { cursor in
                try cursor.last().map { try Self.sequence(fromKey: $0.key, path: environment.path) } ?? 0
            }
        }
    }

    // MARK: Reading

    /// The current revision of a document, tombstones included.
    package func record(_ id: String, in transaction: LMDBTransaction) throws -> Document? {
        if id.utf8.first == UInt8(ascii: "_") && id.hasPrefix(Self.localPrefix) { return try localRecord(id, in: transaction) }
        var key = id
        return try key.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            guard let bytes = try transaction.get(docs, key) else { return nil }
            let document = try DocumentRecord(bytes: bytes, id: key, path: environment.path).document(id: id)
            // Past its expiration time a document reads as missing, before the purge that removes it has run.
            if try isExpired(key, in: transaction) { return nil }
            return document
        }
    }

    /// The current revision of a document as stored, tombstones and expired documents included.
    package func storedRecord(_ id: String, in transaction: LMDBTransaction) throws -> Document? {
        var key = id
        return try key.withUTF8 { key in
            try transaction.get(docs, UnsafeRawBufferPointer(key)).map {
                try DocumentRecord(bytes: $0, id: key, path: environment.path).document(id: id)
            }
        }
    }

    /// The revision of a document that exists and is not deleted, read without its body.
    package func liveRevision(_ id: String) throws -> Revision? {
        try environment.read { try liveRevision(id, in: $0) }
    }

    /// The revision of a document that exists and is not deleted, as `transaction` sees it.
    package func liveRevision(_ id: String, in transaction: LMDBTransaction) throws -> Revision? {
        var key = id
        return try key.withUTF8 { key in
            guard let bytes = try transaction.get(docs, UnsafeRawBufferPointer(key)) else { return nil }
            let record = try DocumentRecord(bytes: bytes, id: key, path: environment.path)
            return record.isDeleted ? nil : record.revision
        }
    }

    /// The document, or nil when it does not exist or was deleted.
    package func document(_ id: String) throws -> Document? {
        try environment.read { transaction in
            guard let document = try record(id, in: transaction), !document.isDeleted else { return nil }
            return document
        }
    }

    /// The sequence number of the latest write (0 for an empty database).
    package func lastSequence(in transaction: LMDBTransaction) throws -> UInt64 {
        try transaction.withCursor(seqs) { cursor in
            guard let last = try cursor.last() else { return 0 }
            return try Self.sequence(fromKey: last.key, path: environment.path)
        }
    }

    package func lastSequence() throws -> UInt64 {
        try environment.read { try lastSequence(in: $0) }
    }

    /// Visits the documents changed after `since`, in sequence order, reading
    /// records in place (valid only during the call).
    package func forEachChange(
        since: UInt64, in transaction: LMDBTransaction,
        _ body: (_ sequence: UInt64, _ id: UnsafeRawBufferPointer, _ record: DocumentRecord) throws -> Bool
    ) throws {
        try transaction.withCursor(seqs) { cursor in
            try transaction.withCursor(docs) { documents in
                let start = (since + 1).bigEndian
                var entry = try withUnsafeBytes(of: start) { try cursor.seek(atOrAfter: $0) }
                var pages = MappedPagesRelease(environment)
                while let (key, id) = entry {
                    let sequence = try Self.sequence(fromKey: key, path: environment.path)
                    // A purge's entry (``purge(_:onlyExpired:)``): it only holds the sequence.
                    if id.isEmpty {
                        entry = try cursor.next()
                        continue
                    }
                    guard let record = try documents.find(id)?.value else {
                        throw StorageError(code: MDB_CORRUPTED, operation: "reading the changes feed: seq \(sequence) names a missing document")
                    }
                    pages.read(id.count + record.count)
                    if try !body(sequence, id, DocumentRecord(bytes: record, id: id, path: environment.path)) { return }
                    entry = try cursor.next()
                }
            }
        }
    }

    /// The documents changed after `since`, oldest first.
    package func changes(since: UInt64, limit: Int? = nil) throws -> [Change] {
        try environment.read { transaction in
            var changes: [Change] = []
            try forEachChange(since: since, in: transaction) { sequence, id, record in
                changes.append(Change(sequence: sequence, id: String(decoding: id, as: UTF8.self), revision: record.revision, isDeleted: record.isDeleted))
                return limit.map { changes.count < $0 } ?? true
            }
            return changes
        }
    }

    /// The sequence number a key of the `seqs` table holds (8 bytes, big-endian).
    package static func sequence(fromKey key: UnsafeRawBufferPointer, path: String) throws(StorageError) -> UInt64 {
        guard key.count == 8 else {
            throw StorageError.damagedRecord("the changes feed", in: path, "a key of the changes feed is \(key.count) bytes where a sequence number takes 8")
        }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    // MARK: Writing

    /// Refuses an edit of `revision` when its generation is the highest a
    /// revision holds here (CouchDB counts edits without bound): the next
    /// one could not be counted.
    static func checkExtendable(_ revision: Revision, id: String) throws(DocumentError) {
        guard revision.generation < UInt32.max else {
            throw DocumentError(.badRequest, "revision \(revision) cannot be edited: its generation is the highest Settee stores (\(UInt32.max))", id: id)
        }
    }

    /// Writes one validated edit inside a write transaction: checks `_rev`
    /// against the current revision, assigns the next sequence number, and
    /// adds what it does to the counts to `countChange`.
    package func apply(_ edit: DocumentEdit, sequence: UInt64, in transaction: LMDBTransaction, scratch: inout [UInt8],
               countChange: inout DocumentCounts, validated: ValidatedWrite? = nil) throws -> WriteResult {
        let id = edit.id ?? ids.next()
        if id.utf8.first == UInt8(ascii: "_") && id.hasPrefix(Self.localPrefix) { return try applyLocal(edit, id: id, in: transaction, scratch: &scratch) }
        var idCopy = id
        return try idCopy.withUTF8 { idBytes in
            let key = UnsafeRawBufferPointer(idBytes)
            var previous: Revision?
            var previousSequence: UInt64?
            var current: DocumentRecord?
            var stored = try transaction.get(docs, key).map { try DocumentRecord(bytes: $0, id: key, path: environment.path) }
            if let record = stored, record.hasRevisionTree {
                return try applyToTree(edit, id: id, key: key, record: record, sequence: sequence, in: transaction, scratch: &scratch,
                                       countChange: &countChange)
            }
            var refusal = stored.flatMap { Self.refusal(of: edit, id: id, over: $0) }
            // An expired document not yet purged reads as missing: it is purged
            // once the edit has passed validation, and written anew.
            var expired: (sequence: UInt64, isDeleted: Bool)?
            if let record = stored, refusal != nil, try isExpired(key, in: transaction) {
                expired = (record.sequence, record.isDeleted)
                (stored, refusal) = (nil, nil)
            }
            if let record = stored {
                current = record
                if let refusal { throw refusal }
                try Self.checkExtendable(record.revision, id: id)
                previous = record.revision
                previousSequence = record.sequence
            } else if edit.revision != nil || edit.deleted {
                throw edit.deleted ? DocumentError(.notFound, "missing", id: id) : DocumentError.conflict(id)
            }
            if let validation {
                // Checked ahead against this very revision, with what this transaction checks with: not again.
                let checked = validated.map { $0.id == id && $0.sequence == current?.sequence && validation.stillChecks($0) } ?? false
                if !checked { try validation.validate(edit, id: id, current: current) }
            }
            if let expired {
                try purgeExpired(key, sequence: expired.sequence, isDeleted: expired.isDeleted, in: transaction, countChange: &countChange)
            }
            // Read before the put: the record points into the page the put rewrites.
            let wasDeleted = current?.isDeleted
            // The leaf this edit replaces, kept (with its attachments' references) until compaction.
            let earlier = keepsEarlierRevisions ? current.map {
                earlierRecord(revision: $0.revision, sequence: $0.sequence, isDeleted: $0.isDeleted, body: $0.body, hasAttachments: $0.hasAttachments)
            } : nil
            // Attachments: only an edit that names some, or replaces a revision that had some, pays for them.
            var attached: (body: [UInt8], term: [UInt8])?
            if edit.attachments != nil || current?.hasAttachments == true {
                attached = try writeAttachments(of: edit, id: id, current: current, generation: Int((previous?.generation ?? 0) + 1),
                                                releasingCurrent: earlier == nil, in: transaction)
            }
            let revision = edit.revision(following: previous, attachmentsTerm: attached?.term)
            (attached?.body ?? edit.body).withUnsafeBytes {
                DocumentRecord.encode(sequence: sequence, revision: revision, deleted: edit.deleted, body: $0, into: &scratch,
                                      hasAttachments: attached != nil)
            }
            try scratch.withUnsafeBytes { try transaction.put(docs, key, $0) }
            if let earlier, let previous { try keepEarlier(key, previous, record: earlier, in: transaction) }
            if let previous { try keepAncestors(key, parent: previous, limit: try revisionsLimit(inWrite: transaction), in: transaction, scratch: &scratch) }
            if let previousSequence {
                try withUnsafeBytes(of: previousSequence.bigEndian) { _ = try transaction.delete(seqs, $0) }
            }
            try withUnsafeBytes(of: sequence.bigEndian) { try transaction.put(seqs, $0, key, append: true) }
            countChange.countWrite(wasDeleted: wasDeleted, isDeleted: edit.deleted)
            return WriteResult(id: id, revision: revision, sequence: sequence)
        }
    }

    /// Runs `body` in a write transaction of documents and commits it, then
    /// wakes whoever waits for new writes. Every document write goes through
    /// here: `body` adds what its writes change the counts by to its second
    /// argument, and the kept counts are rewritten in the same transaction.
    /// With `runsBodyOnce`, `body` never runs again when the map grows (see
    /// ``LMDBEnvironment/write(durable:runsBodyOnce:_:)``).
    package func writing<T>(runsBodyOnce: Bool = false, _ body: (LMDBTransaction, inout DocumentCounts) throws -> T) throws -> T {
        var sequence: UInt64 = 0
        var written: UInt64 = 0
        let result = try environment.write(runsBodyOnce: runsBodyOnce) { transaction in
            try validation?.beginWrite(store: self, in: transaction)
            let before = try lastSequence(in: transaction)
            var countChange = DocumentCounts()
            let result = try body(transaction, &countChange)
            sequence = try lastSequence(in: transaction)
            written = sequence - before
            if sequence != before { try keepCounts(changedBy: countChange, from: before, to: sequence, in: transaction) }
            return result
        }
        commits.committed(sequence)
        // The pages a large write read (each document it replaced, and the
        // path to it) needn't stay this process's memory.
        if written >= Self.releasingWriteSize { environment.releaseMappedPages() }
        return result
    }

    /// Documents written in one transaction past which the map's pages it read are released.
    static let releasingWriteSize: UInt64 = 1024

    /// Why `edit` may not be written over the stored `record`, if it may not.
    private static func refusal(of edit: DocumentEdit, id: String, over record: DocumentRecord) -> DocumentError? {
        if record.isDeleted {
            // A deleted document may be re-created without a _rev, as in CouchDB.
            if edit.revision != nil && edit.revision != record.revision { return DocumentError.conflict(id) }
            if edit.deleted && edit.revision == nil { return DocumentError(.notFound, "deleted", id: id) }
            return nil
        }
        return edit.revision != record.revision ? DocumentError.conflict(id) : nil
    }

    /// Writes one edit in its own transaction.
    package func write(_ edit: DocumentEdit) throws -> WriteResult {
        let validated = try validatedAhead(edit)
        return try writing { transaction, countChange in
            var scratch: [UInt8] = []
            return try apply(edit, sequence: try lastSequence(in: transaction) + 1, in: transaction, scratch: &scratch,
                             countChange: &countChange, validated: validated)
        }
    }

    /// `edit` checked by the validation on a read snapshot, before its write
    /// transaction: a slow `validate_doc_update` holds no writer, of this
    /// process or another. Nil when the edit is checked in the transaction
    /// instead: one without an id yet, a local or design document, a
    /// document with conflicts, or an edit the transaction refuses anyway.
    private func validatedAhead(_ edit: DocumentEdit) throws -> ValidatedWrite? {
        guard let validation, let id = edit.id, !id.hasPrefix("_"), !edit.deleted || edit.revision != nil else { return nil }
        return try environment.read { transaction in
            var idCopy = id
            let record = try idCopy.withUTF8 { idBytes -> DocumentRecord? in
                let key = UnsafeRawBufferPointer(idBytes)
                return try transaction.get(docs, key).map { try DocumentRecord(bytes: $0, id: key, path: environment.path) }
            }
            if let record, record.hasRevisionTree || Self.refusal(of: edit, id: id, over: record) != nil { return nil }
            if record == nil && edit.revision != nil { return nil }
            return try validation.validateAhead(edit, id: id, current: record, store: self, in: transaction)
        }
    }

    /// Writes many edits in one transaction. Each edit that is refused (a
    /// conflict, or by `check`, which sees the transaction before the edit
    /// is applied) is reported and skipped; the others land.
    package func write(_ edits: [DocumentEdit], checking check: ((DocumentEdit, LMDBTransaction) throws -> Void)? = nil)
        throws -> [Result<WriteResult, DocumentError>] {
        try writing { transaction, countChange in
            var sequence = try lastSequence(in: transaction)
            var scratch: [UInt8] = []
            var results: [Result<WriteResult, DocumentError>] = []
            results.reserveCapacity(edits.count)
            for edit in edits {
                do {
                    try check?(edit, transaction)
                    let result = try apply(edit, sequence: sequence + 1, in: transaction, scratch: &scratch, countChange: &countChange)
                    // A local document takes no sequence number (its result's is 0).
                    sequence = max(sequence, result.sequence)
                    results.append(.success(result))
                } catch let error as DocumentError {
                    results.append(.failure(error))
                }
            }
            return results
        }
    }
}

/// CouchDB's default "sequential" ids: a random 26-hex-digit prefix and a
/// 6-digit suffix that grows by a random step, so new ids land near each other
/// in the B-tree yet stay unguessable across prefixes.
package final class DocumentIDGenerator: @unchecked Sendable {
    private let lock = NSLock()
    private var prefix = DocumentIDGenerator.randomPrefix()
    private var counter = UInt32.random(in: 0..<0x1000)

    package func next() -> String {
        lock.lock()
        defer { lock.unlock() }
        counter += UInt32.random(in: 1...0xFE)
        if counter >= 0x100_0000 {
            prefix = Self.randomPrefix()
            counter = UInt32.random(in: 0..<0x1000)
        }
        let suffix = String(counter, radix: 16)
        return prefix + String(repeating: "0", count: 6 - suffix.count) + suffix
    }

    private static func randomPrefix() -> String {
        (0..<13).map { _ in UInt8.random(in: 0...255) }.hexString
    }
}
