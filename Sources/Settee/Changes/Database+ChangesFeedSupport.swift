import SetteeCore
@_spi(LMDB) import SetteeStorage
import Foundation

/// What the HTTP changes feed (`settee serve`'s `/{db}/_changes`) needs
/// beyond the public API: waiting for a commit under the caller's own
/// timeout, the feed newest first, and how many changes remain.
extension Database {
    /// Returns when a write past `sequence` has committed (at once if one
    /// has), by this process or another: `true`; when the calling task is
    /// cancelled or the database closed: `false`. Cancel the task to stop
    /// waiting (a heartbeat timer does).
    package func waitForCommit(after sequence: UInt64) async -> Bool {
        await storeEvenIfClosed.commits.wait(after: sequence)
    }

    /// The documents changed, newest first, at most `limit` of them:
    /// CouchDB's `_changes?descending=true`.
    package func changesNewestFirst(limit: Int?) async throws -> [Change] {
        try await background {
            let store = try self.store
            return try self.environment.read { transaction in
                var changes: [Change] = []
                try transaction.withCursor(store.seqs) { cursor in
                    try transaction.withCursor(store.docs) { documents in
                        var entry = try cursor.last()
                        while let (key, id) = entry {
                            if let limit, changes.count >= limit { return }
                            let sequence = try DocumentStore.sequence(fromKey: key, path: self.url.path)
                            // A purge's entry holds only the sequence.
                            if !id.isEmpty, let record = try documents.find(id)?.value {
                                let stored = try DocumentRecord(bytes: record, id: id, path: self.url.path)
                                changes.append(Change(sequence: sequence, id: String(decoding: id, as: UTF8.self),
                                                      revision: stored.revision, isDeleted: stored.isDeleted))
                            }
                            entry = try cursor.previous()
                        }
                    }
                }
                return changes
            }
        }
    }

    /// How many documents changed after `sequence` (CouchDB's `pending`).
    package func countChanges(after sequence: UInt64) async throws -> Int {
        try await background {
            let store = try self.store
            return try self.environment.read { transaction in
                try transaction.withCursor(store.seqs) { cursor in
                    var count = 0
                    let start = (sequence &+ 1).bigEndian
                    var entry = try withUnsafeBytes(of: start) { try cursor.seek(atOrAfter: $0) }
                    while let (_, id) = entry {
                        if !id.isEmpty { count += 1 }
                        entry = try cursor.next()
                    }
                    return count
                }
            }
        }
    }
}
