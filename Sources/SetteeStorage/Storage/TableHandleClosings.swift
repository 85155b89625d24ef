import Foundation
import SetteeCore

/// Handles of emptied tables, closed once no transaction of this process can
/// be using them.
///
/// A removed index's tables are emptied, never deleted (see
/// ``LMDBEnvironment/emptyDatabase(_:in:)``), but their handles are closed:
/// LMDB then gives the slots to tables opened later, so a process whose views
/// change again and again keeps a bounded number of handles (LMDB allows
/// 4,096, and every read transaction walks them all). A handle may be closed
/// only when no transaction uses it, and a read transaction that began before
/// the emptying committed may still read the table's rows in its snapshot. So
/// readers are counted by epoch: the epoch moves on with each commit that
/// emptied tables, and a handle emptied in epoch E is closed, before a later
/// write begins, once no reader of epoch E or earlier is left. Readers of
/// later epochs see no index state for those tables and do not read them.
package final class TableHandleClosings: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`:
    private var epoch: UInt64 = 0
    /// Readers by the epoch they began in, oldest first (one entry, as a rule:
    /// every read would otherwise hash into a dictionary).
    private var readers: [(epoch: UInt64, count: Int)] = []
    /// Emptied tables' handles, by name, with the epoch they were emptied in.
    private var pending: [String: (dbi: UInt32, epoch: UInt64)] = [:]
    /// Tables emptied by the write transaction in progress (the writer's only).
    private var uncommitted: [(name: String, dbi: UInt32)] = []

    /// Registers a reader before its transaction begins; pass the result to ``readerEnded(_:)``.
    package func readerBegins() -> UInt64 {
        lock.withLock {
            if let last = readers.indices.last, readers[last].epoch == epoch {
                readers[last].count += 1
            } else {
                readers.append((epoch, 1))
            }
            return epoch
        }
    }

    package func readerEnded(_ epoch: UInt64) {
        lock.withLock {
            guard let index = readers.firstIndex(where: { $0.epoch == epoch }) else { return }
            readers[index].count -= 1
            if readers[index].count == 0 { readers.remove(at: index) }
        }
    }

    /// The write transaction in progress emptied the table `name`.
    package func emptied(_ name: String, dbi: UInt32) {
        uncommitted.append((name, dbi))
    }

    /// The write transaction committed: its emptied tables' handles wait for the readers before it.
    package func committed() {
        guard !uncommitted.isEmpty else { return }
        lock.withLock {
            for (name, dbi) in uncommitted { pending[name] = (dbi, epoch) }
            epoch += 1
        }
        uncommitted.removeAll()
    }

    package func rolledBack() {
        uncommitted.removeAll()
    }

    /// The tables are in use again (an index that came back): their handles stay open.
    package func reopened(_ names: [String]) {
        lock.withLock {
            guard !pending.isEmpty else { return }
            for name in names { pending[name] = nil }
        }
    }

    /// Takes the handles no reader can be using any more: the caller closes them.
    package func closable() -> [UInt32] {
        lock.withLock {
            guard !pending.isEmpty else { return [] }
            let oldestReader = readers.first?.epoch ?? .max
            let names = pending.filter { $0.value.epoch < oldestReader }.map(\.key)
            return names.map { pending.removeValue(forKey: $0)!.dbi }
        }
    }
}
