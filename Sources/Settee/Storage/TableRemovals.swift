import Foundation

/// Tables that were dropped while read transactions may still use them.
///
/// Removing a named table in LMDB (`mdb_drop` with `del = 1`) also closes its
/// handle at once, in every transaction of the process: a read transaction
/// that began before the removal, holds the handle and has not yet looked at
/// the table then finds it empty or fails with `MDB_BAD_DBI`, although its
/// snapshot still holds every row. So a drop only empties the table (its old
/// pages stay readable in older snapshots), and the table itself goes with a
/// later write, once every read transaction that began before the drop's
/// commit has ended.
///
/// Readers are counted by epoch: the epoch moves on with each commit that
/// dropped tables, and a table dropped in epoch E may go when no reader of
/// epoch E or earlier is left. A table left empty by a process that ended
/// before it went costs a name in the main table, nothing more, and is used
/// again if its index comes back.
final class TableRemovals: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`:
    private var epoch: UInt64 = 0
    /// Readers by the epoch they began in, oldest first (one entry, as a rule:
    /// every read would otherwise hash into a dictionary).
    private var readers: [(epoch: UInt64, count: Int)] = []
    private var pending: [String: UInt64] = [:]
    /// Tables dropped by the write transaction in progress (the writer's only).
    private var uncommitted: [String] = []

    /// Registers a reader before its transaction begins; pass the result to ``readerEnded(_:)``.
    func readerBegins() -> UInt64 {
        lock.withLock {
            if let last = readers.indices.last, readers[last].epoch == epoch {
                readers[last].count += 1
            } else {
                readers.append((epoch, 1))
            }
            return epoch
        }
    }

    func readerEnded(_ epoch: UInt64) {
        lock.withLock {
            guard let index = readers.firstIndex(where: { $0.epoch == epoch }) else { return }
            readers[index].count -= 1
            if readers[index].count == 0 { readers.remove(at: index) }
        }
    }

    /// The write transaction in progress emptied `name`.
    func dropped(_ name: String) {
        uncommitted.append(name)
    }

    /// The write transaction committed: its dropped tables wait for the readers before it.
    func committed() {
        guard !uncommitted.isEmpty else { return }
        lock.withLock {
            for name in uncommitted { pending[name] = epoch }
            epoch += 1
        }
        uncommitted.removeAll()
    }

    func rolledBack() {
        uncommitted.removeAll()
    }

    /// The tables are in use again (an index that came back): they stay.
    func reopened(_ names: [String]) {
        lock.withLock {
            guard !pending.isEmpty else { return }
            for name in names { pending[name] = nil }
        }
    }

    /// Dropped tables no reader can be using any more.
    func removable() -> [String] {
        lock.withLock {
            guard !pending.isEmpty else { return [] }
            let oldestReader = readers.first?.epoch ?? .max
            return pending.filter { $0.value < oldestReader }.map(\.key).sorted()
        }
    }

    /// The tables went, with a committed write.
    func removed(_ names: [String]) {
        lock.withLock {
            for name in names { pending[name] = nil }
        }
    }

    var hasPending: Bool {
        lock.withLock { !pending.isEmpty }
    }
}
