import CSetteeLMDB
@testable import Settee
@_spi(LMDB) import SetteeStorage

extension LMDBTransaction {
    /// Every entry of `table` in key order, each as its key, 0xEE and its value.
    func entries(of table: LMDBTable) throws -> [[UInt8]] {
        try withCursor(table) { cursor in
            var entries: [[UInt8]] = []
            var entry = try cursor.first()
            while let (key, value) = entry {
                entries.append(Array(key) + [0xEE] + Array(value))
                entry = try cursor.next()
            }
            return entries
        }
    }
}
