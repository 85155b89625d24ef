import CSetteeLMDB
import Foundation
import SetteeCore
@_spi(LMDB) import SetteeStorage
import SetteeJavaScript
import SetteeViews

/// What ``Database/verify()-9s9vc`` found: how much it checked, and each problem.
public struct VerificationReport: Sendable, Equatable {
    /// Document records checked (tombstones included).
    public var documents = 0
    /// Entries of the changes feed checked.
    public var changes = 0
    /// View indexes checked.
    public var indexes = 0
    /// Index rows checked.
    public var indexRows = 0
    /// What is damaged, one sentence each, naming the document, the changes
    /// feed entry or the index (at most ``maximumProblems``).
    public var problems: [String] = []
    /// Problems found past ``maximumProblems``, not listed.
    public var unlistedProblems = 0

    /// The most problems listed; the rest are counted.
    public static let maximumProblems = 1000

    /// Whether nothing damaged was found.
    public var isIntact: Bool { problems.isEmpty }

    mutating func problem(_ text: String) {
        if problems.count < Self.maximumProblems { problems.append(text) } else { unlistedProblems += 1 }
    }
}

extension Database {
    /// Reads the whole database and checks what can be checked without
    /// running JavaScript:
    ///
    /// - every document record: its layout, its body is a JSON object, and
    ///   the changes feed lists it at its sequence number;
    /// - every entry of the changes feed: its key is a sequence number, and
    ///   it names a document whose record is at that sequence;
    /// - the kept document counts (what ``info()-xd81`` and `_all_docs` report),
    ///   against the live documents and tombstones counted;
    /// - every view index, against the documents: each row's layout and JSON,
    ///   its document exists, its back-index entry lists it (and each row a
    ///   back-index entry lists exists), the count its state records, and
    ///   the layout of its stored reduction chunks;
    /// - attachments: each stored body's reference count against the stubs
    ///   of the documents, no body that nothing refers to, and its chunks
    ///   adding up to its length.
    ///
    /// LMDB keeps no checksums: damage it cannot see (a page overwritten with
    /// plausible bytes) shows here as records that do not decode or do not
    /// agree. The documents, the changes feed and each index are read in a
    /// snapshot each (what they are compared with, in the same one); writes
    /// may go on meanwhile. A page LMDB cannot read ends the check of its
    /// part, reported as a problem; the other parts are still checked.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func verify() throws -> VerificationReport {
        var report = VerificationReport()
        let path = try environment.path
        let tableNames = Set(try environment.tableNames())
        let states = try environment.read { try indexes.allStates(in: $0) }
        // Opened before the transaction that reads them (LMDB's rule); missing tables are reported, not created.
        var tables: [String: ViewIndexTables] = [:]
        for (signature, state) in states {
            let names = ["rows:", "back:", "chunks:"].map { $0 + signature }
            if names.allSatisfy(tableNames.contains) {
                tables[signature] = try indexes.tables(for: signature)
            } else {
                report.problem("\(Self.indexName(state)) (\(signature)): its tables are missing")
            }
        }
        // Each part reads in a transaction of its own: once LMDB meets a page
        // it cannot read, it refuses everything else in that transaction.
        Self.continuing("the documents table", &report) { report in
            try environment.read { try verifyDocuments(in: $0, path: path, report: &report) }
        }
        Self.continuing("the changes feed", &report) { report in
            try environment.read { try verifyChanges(in: $0, path: path, report: &report) }
        }
        Self.continuing("the expirations", &report) { report in
            for problem in try environment.read({ try store.expirationProblems(in: $0) }) { report.problem(problem) }
        }
        for (signature, state) in states {
            guard let tables = tables[signature] else { continue }
            let name = Self.indexName(state)
            Self.continuing(name, &report) { report in
                try environment.read { transaction in
                    // An index removed meanwhile is not read (its handles may be closed).
                    guard try indexes.areCurrent(tables), let state = try indexes.state(signature, in: transaction) else { return }
                    report.indexes += 1
                    try verifyIndex(tables, state: state, named: name, in: transaction, report: &report)
                }
            }
        }
        return report
    }

    /// Runs one part of the check; a storage failure (a page LMDB cannot
    /// read) is reported as that part's damage, and the other parts go on.
    private static func continuing(_ part: String, _ report: inout VerificationReport,
                                   _ body: (inout VerificationReport) throws -> Void) {
        do {
            try body(&report)
        } catch let error as StorageError {
            report.problem("\(part): \(error.reason); the rest of it was not checked")
        } catch {
            report.problem("\(part): \(error); the rest of it was not checked")
        }
    }

    private func verifyDocuments(in transaction: LMDBTransaction, path: String, report: inout VerificationReport) throws {
        var counted = DocumentCounts()
        try transaction.withCursor(store.docs) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                entry = try cursor.next()
                report.documents += 1
                let id = String(decoding: key, as: UTF8.self)
                let record: DocumentRecord
                do {
                    record = try DocumentRecord(bytes: value, id: key, path: path)
                } catch let error as StorageError {
                    report.problem(error.reason)
                    continue
                }
                if record.isDeleted { counted.deleted += 1 } else { counted.live += 1 }
                if case .object? = try? JSONParser.parse(record.body) {} else {
                    report.problem("document \"\(id)\": its body is not a JSON object")
                }
                if record.generation == 0 {
                    report.problem("document \"\(id)\": its revision's generation is 0")
                }
                let listed = try withUnsafeBytes(of: record.sequence.bigEndian) { try transaction.get(store.seqs, $0) }
                if listed.map({ compareBytes($0, key) != 0 }) ?? true {
                    report.problem("document \"\(id)\": the changes feed does not list it at its sequence \(record.sequence)")
                }
            }
        }
        try verifyKeptCounts(counted, in: transaction, report: &report)
        // Attachments: reference counts, bodies and chunks against the documents' stubs.
        do {
            for problem in try store.attachmentProblems() { report.problem("attachments: \(problem)") }
        } catch {
            report.problem("attachments: \(error)")
        }
    }

    /// Compares the kept counts with those of a full read of the documents
    /// (records that do not decode left out, and reported on their own).
    /// Counts a Settee without them left behind (at an earlier sequence) are
    /// not used, and counted again at the next write: not damage.
    private func verifyKeptCounts(_ counted: DocumentCounts, in transaction: LMDBTransaction, report: inout VerificationReport) throws {
        guard let bytes = try store.keptRecordBytes(in: transaction) else { return }
        guard let kept = bytes.withUnsafeBytes({ KeptDocumentCounts(record: $0) }) else {
            report.problem("kept document counts: the record does not decode: \(String(decoding: bytes.prefix(200), as: UTF8.self))")
            return
        }
        let last = try store.lastSequence(in: transaction)
        if kept.sequence > last {
            report.problem("kept document counts: recorded at sequence \(kept.sequence), after the last write (\(last))")
        } else if kept.sequence == last && kept.counts != counted {
            report.problem("kept document counts: \(kept.counts.live) live and \(kept.counts.deleted) deleted, but the documents table holds \(counted.live) live and \(counted.deleted) deleted")
        }
    }

    private func verifyChanges(in transaction: LMDBTransaction, path: String, report: inout VerificationReport) throws {
        try transaction.withCursor(store.seqs) { cursor in
            var entry = try cursor.first()
            while let (key, id) = entry {
                entry = try cursor.next()
                // A purge's entry holds the sequence only (``DocumentStore/purge(_:onlyExpired:)``).
                if id.isEmpty { continue }
                report.changes += 1
                guard key.count == 8 else {
                    report.problem("changes feed: a key is \(key.count) bytes where a sequence number takes 8")
                    continue
                }
                let sequence = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
                let name = String(decoding: id, as: UTF8.self)
                guard let value = try transaction.get(store.docs, id) else {
                    report.problem("changes feed: sequence \(sequence) names document \"\(name)\", which does not exist")
                    continue
                }
                // A record that does not decode is reported with the documents.
                if let record = try? DocumentRecord(bytes: value, id: id, path: path), record.sequence != sequence {
                    report.problem("changes feed: sequence \(sequence) names document \"\(name)\", whose record is at sequence \(record.sequence)")
                }
            }
        }
    }

    /// How reports name an index: `index DESIGN/VIEW`, or `index NAME` for a view written in Swift.
    private static func indexName(_ state: ViewIndexState) -> String {
        if state.designDocument.isEmpty { return "index \(state.view)" }
        let design = state.designDocument.hasPrefix("_design/") ? state.designDocument.dropFirst("_design/".count) : Substring(state.designDocument)
        return "index \(design)/\(state.view)"
    }

    private func verifyIndex(_ tables: ViewIndexTables, state: ViewIndexState, named name: String, in transaction: LMDBTransaction,
                             report: inout VerificationReport) throws {
        var rows = 0
        try transaction.withCursor(tables.rows) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                entry = try cursor.next()
                rows += 1
                let row: IndexRow
                do {
                    row = try IndexRow(storedKey: key, value: value)
                } catch {
                    report.problem("\(name): a row's value is shorter than the lengths it records, or its key too short")
                    continue
                }
                if let problem = Self.rowProblem(row) {
                    report.problem("\(name): a row's \(problem) (document \"\(row.id)\")")
                    continue
                }
                let found = try row.withID { try transaction.get(store.docs, $0) != nil }
                if !found { report.problem("\(name): a row of document \"\(row.id)\", which does not exist") }
            }
        }
        report.indexRows += rows
        var listed = 0
        var scratch: [UInt8] = []
        try transaction.withCursor(tables.back) { cursor in
            var entry = try cursor.first()
            while let (id, value) = entry {
                entry = try cursor.next()
                let document = String(decoding: id, as: UTF8.self)
                if try transaction.get(store.docs, id) == nil {
                    report.problem("\(name): the back index lists document \"\(document)\", which does not exist")
                }
                do {
                    var missing = 0
                    try IndexRow.forEachStoredKey(inBackEntry: value, id: id, scratch: &scratch) { key in
                        listed += 1
                        if try transaction.get(tables.rows, key) == nil { missing += 1 }
                    }
                    if missing > 0 { report.problem("\(name): \(missing) row(s) of document \"\(document)\" are missing") }
                } catch {
                    report.problem("\(name): the back-index entry of document \"\(document)\" does not decode")
                }
            }
        }
        if listed != rows {
            report.problem("\(name): \(rows) rows, but the back index lists \(listed)")
        }
        if state.rowCount != rows {
            report.problem("\(name): \(rows) rows, but its state records \(state.rowCount)")
        }
        try transaction.withCursor(tables.chunks) { cursor in
            var entry = try cursor.first()
            var damaged = 0
            while let (_, value) = entry {
                entry = try cursor.next()
                guard let chunk = try? StoredChunk(value: value) else {
                    damaged += 1
                    continue
                }
                if let reduction = chunk.reduction, (try? JSONParser.parse(reduction)) == nil { damaged += 1 }
            }
            if damaged > 0 { report.problem("\(name): \(damaged) stored reduction chunk(s) do not decode") }
        }
    }

    /// What is wrong with a row whose layout decodes (see ``IndexRow``), or nil.
    private static func rowProblem(_ row: IndexRow) -> String? {
        // The stored key is made from the full key: the full key itself, or its
        // first 480 bytes and a hash of the whole.
        var expected: [UInt8] = []
        IndexRow.appendStoredKey(forFullKey: Array(row.fullKey), to: &expected)
        if compareBytes(row.storedKey, expected) != 0 { return "key does not match its full key" }
        if (try? JSONParser.parse(row.keyJSON)) == nil { return "key is not JSON" }
        if (try? JSONParser.parse(row.valueJSON)) == nil { return "value is not JSON" }
        return nil
    }
}
