package import Foundation
import SetteeCore
import Logging

/// Document expiration, as Couchbase Lite's `setDocumentExpiration`: a time
/// per document, after which it is purged (``purge(_:onlyExpired:)``). Kept twice: in
/// `expirations` (id → time) to read and clear one document's, and in
/// `expiration_times` (time ‖ id → nothing) to find those due, in order.
/// A time is stored as big-endian u64 milliseconds since 1970.
///
/// Past its time a document reads as missing (``record(_:in:)``), before the
/// purge has run.
extension DocumentStore {
    /// Milliseconds since 1970 (clamped to 0 before it).
    static func milliseconds(_ date: Date) -> UInt64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.up)
        return value <= 0 ? 0 : value >= 1.8e19 ? UInt64.max : UInt64(value)
    }

    private static func date(_ bytes: UnsafeRawBufferPointer) -> Date {
        Date(timeIntervalSince1970: Double(UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))) / 1000)
    }

    private static func timeKey(_ milliseconds: UInt64, id: String) -> [UInt8] {
        withUnsafeBytes(of: milliseconds.bigEndian, Array.init) + Array(id.utf8)
    }

    /// When the document expires, or nil when it does not.
    package func expiration(of id: String, in transaction: LMDBTransaction) throws -> Date? {
        guard let expirations, let bytes = try transaction.get(expirations, Array(id.utf8)), bytes.count == 8 else { return nil }
        return Self.date(bytes)
    }

    /// Whether the document (its id's UTF-8) has an expiration time that has
    /// passed: one lookup, in a table that is empty unless expirations are set.
    package func isExpired(_ id: UnsafeRawBufferPointer, in transaction: LMDBTransaction) throws -> Bool {
        guard let expirations, let bytes = try transaction.get(expirations, id), bytes.count == 8 else { return false }
        return Self.date(bytes) <= Date()
    }

    /// Sets (or, with nil, clears) when a document expires. The document
    /// must exist and not be deleted (a local document does not expire).
    package func setExpiration(_ date: Date?, for id: String) throws {
        try DocumentEdit.validate(id: id)
        if id.hasPrefix(Self.localPrefix) {
            throw DocumentError(.badRequest, "Local documents (`_local/`) do not expire", id: id)
        }
        try environment.write { transaction in
            let expirations = try writable(expirations), times = try writable(expirationTimes)
            if date != nil {
                guard let document = try record(id, in: transaction) else { throw DocumentError(.notFound, "missing", id: id) }
                if document.isDeleted { throw DocumentError(.notFound, "deleted", id: id) }
            }
            try removeExpiration(of: id, in: transaction)
            guard let date else { return }
            let milliseconds = Self.milliseconds(date)
            try withUnsafeBytes(of: milliseconds.bigEndian) { try transaction.put(expirations, Array(id.utf8), $0) }
            try transaction.put(times, Self.timeKey(milliseconds, id: id), [UInt8]())
        }
    }

    /// Forgets a document's expiration time, if it has one.
    func removeExpiration(of id: String, in transaction: LMDBTransaction) throws {
        guard let expirations, let times = expirationTimes else { return }
        let key = Array(id.utf8)
        guard let bytes = try transaction.get(expirations, key), bytes.count == 8 else { return }
        let milliseconds = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        _ = try transaction.delete(expirations, key)
        _ = try transaction.delete(times, Self.timeKey(milliseconds, id: id))
    }

    /// The documents that expire before `date` (all, without one), soonest first.
    package func expiring(before date: Date?, in transaction: LMDBTransaction) throws -> [(id: String, expiration: Date)] {
        guard let times = expirationTimes else { return [] }
        let end = date.map(Self.milliseconds)
        var found: [(String, Date)] = []
        try transaction.withCursor(times) { cursor in
            var entry = try cursor.first()
            while let (key, _) = entry, key.count >= 8 {
                let time = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
                if let end, time >= end { break }
                found.append((String(decoding: key[8...], as: UTF8.self), Self.date(UnsafeRawBufferPointer(rebasing: key[0..<8]))))
                entry = try cursor.next()
            }
        }
        return found
    }

    /// The soonest expiration time, if any document has one.
    package func nextExpiration(in transaction: LMDBTransaction) throws -> Date? {
        guard let times = expirationTimes else { return nil }
        return try transaction.withCursor(times) { cursor in
            guard let first = try cursor.first(), first.key.count >= 8 else { return nil }
            return Self.date(UnsafeRawBufferPointer(rebasing: first.key[0..<8]))
        }
    }

    /// Purges the documents whose time has come (at `now` or before) and
    /// returns what was purged; reads only, when none has.
    @discardableResult
    package func purgeExpired(now: Date = Date()) throws -> PurgeResult? {
        guard expirationTimes != nil else { return nil }
        let due = try environment.read { transaction -> [String] in
            guard let next = try nextExpiration(in: transaction), next <= now else { return [] }
            return try expiring(before: now.addingTimeInterval(0.001), in: transaction).map(\.id)
        }
        guard !due.isEmpty else { return nil }
        // Listed in a read: each is checked again in the purge's write.
        let result = try purge(due.map { ($0, nil) }, onlyExpired: true)
        logger.info("purged expired documents", metadata: ["count": "\(due.count)"])
        return result
    }

    /// What ``Database/verify()`` finds wrong with the expirations: an entry
    /// of either table without its counterpart in the other, a time that is
    /// not 8 bytes, or an expiration of a document that does not exist.
    package func expirationProblems(in transaction: LMDBTransaction) throws -> [String] {
        guard let expirations, let times = expirationTimes else { return [] }
        var problems: [String] = []
        try transaction.withCursor(expirations) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                entry = try cursor.next()
                let name = String(decoding: key, as: UTF8.self)
                guard value.count == 8 else {
                    problems.append("expirations: document \"\(name)\" has a time of \(value.count) bytes where 8 are stored")
                    continue
                }
                var timeKey = Array(value)
                timeKey.append(contentsOf: key)
                if try transaction.get(times, timeKey) == nil {
                    problems.append("expirations: document \"\(name)\" expires at a time the table by time does not list")
                }
                if try transaction.get(docs, key) == nil {
                    problems.append("expirations: document \"\(name)\" has an expiration time but does not exist")
                }
            }
        }
        try transaction.withCursor(times) { cursor in
            var entry = try cursor.first()
            while let (key, _) = entry {
                entry = try cursor.next()
                guard key.count > 8 else {
                    problems.append("expirations: a key of the table by time is \(key.count) bytes, shorter than a time and an id")
                    continue
                }
                let id = UnsafeRawBufferPointer(rebasing: key[8...])
                let stored = try transaction.get(expirations, id)
                if stored.map({ compareBytes($0, UnsafeRawBufferPointer(rebasing: key[0..<8])) != 0 }) ?? true {
                    problems.append("expirations: the table by time lists document \"\(String(decoding: id, as: UTF8.self))\" at a time it does not have")
                }
            }
        }
        return problems
    }
}
