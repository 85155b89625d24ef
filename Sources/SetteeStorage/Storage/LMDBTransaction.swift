public import CSetteeLMDB
public import CSetteeLMDBGuard
package import Foundation
import SetteeCore

/// A transaction on an ``LMDBEnvironment``, valid only inside the closure that
/// received it. Values read through it point into the memory map: copy what
/// must outlive the transaction.
package struct LMDBTransaction {
    package let txn: OpaquePointer
    package unowned let environment: LMDBEnvironment

    /// LMDB's id of this transaction: a write transaction's is one more than
    /// the last committed one's.
    package var id: Int { mdb_txn_id(txn) }

    /// The value stored under `key`, or nil.
    package func get(_ table: LMDBTable, _ key: UnsafeRawBufferPointer) throws(StorageError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let code = settee_mdb_get(txn, table.dbi, &k, &v)
        // A key LMDB cannot hold (empty, or past its size limit) is one no table has.
        if code == MDB_NOTFOUND || code == MDB_BAD_VALSIZE { return nil }
        try check(code, "reading from \(environment.path)")
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    package func get(_ table: LMDBTable, _ key: some ContiguousBytes) throws(StorageError) -> UnsafeRawBufferPointer? {
        let result: Result<UnsafeRawBufferPointer?, StorageError> = key.withUnsafeBytes { key in
            Result { () throws(StorageError) in try get(table, key) }
        }
        return try result.get()
    }

    package func put(_ table: LMDBTable, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, append: Bool = false) throws(StorageError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(settee_mdb_put(txn, table.dbi, &k, &v, append ? UInt32(MDB_APPEND) : 0), "writing to \(environment.path)")
    }

    package func put(_ table: LMDBTable, _ key: some ContiguousBytes, _ value: some ContiguousBytes, append: Bool = false) throws(StorageError) {
        let result: Result<Void, StorageError> = key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                Result { () throws(StorageError) in try put(table, key, value, append: append) }
            }
        }
        try result.get()
    }

    /// Whether `key` sorts after every key of `table` (true for an empty table):
    /// ascending keys from there on may be written with `append`.
    package func isAfterLastKey(_ table: LMDBTable, _ key: UnsafeRawBufferPointer) throws -> Bool {
        try withCursor(table) { cursor in
            guard let last = try cursor.last() else { return true }
            return compareBytes(key, last.key) > 0
        }
    }

    package func isAfterLastKey(_ table: LMDBTable, _ key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { try isAfterLastKey(table, $0) }
    }

    /// Deletes `key`; returns whether it existed.
    @discardableResult
    package func delete(_ table: LMDBTable, _ key: UnsafeRawBufferPointer) throws(StorageError) -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let code = settee_mdb_del(txn, table.dbi, &k, nil)
        if code == MDB_NOTFOUND { return false }
        try check(code, "deleting from \(environment.path)")
        return true
    }

    @discardableResult
    package func delete(_ table: LMDBTable, _ key: some ContiguousBytes) throws(StorageError) -> Bool {
        let result: Result<Bool, StorageError> = key.withUnsafeBytes { key in
            Result { () throws(StorageError) in try delete(table, key) }
        }
        return try result.get()
    }

    /// A cursor over `table`, closed when `body` returns.
    package func withCursor<T>(_ table: LMDBTable, _ body: (inout LMDBCursor) throws -> T) throws -> T {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, table.dbi, &cursor), "reading from \(environment.path)")
        defer { mdb_cursor_close(cursor) }
        var wrapped = LMDBCursor(cursor: cursor!, path: environment.path)
        return try body(&wrapped)
    }

    /// Removes every entry of `table`, keeping the table.
    package func clear(_ table: LMDBTable) throws(StorageError) {
        try check(settee_mdb_drop(txn, table.dbi, 0), "clearing a table of \(environment.path)")
    }

    /// Number of entries in `table`.
    package func count(_ table: LMDBTable) throws(StorageError) -> Int {
        try statistics(table).ms_entries
    }

    /// Leaf pages of `table` (the pages its entries are on).
    package func leafPages(_ table: LMDBTable) throws(StorageError) -> Int {
        try statistics(table).ms_leaf_pages
    }

    /// Bytes of pages used by `table`.
    package func bytes(_ table: LMDBTable) throws(StorageError) -> Int {
        let stat = try statistics(table)
        return Int(stat.ms_psize) * (stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages)
    }

    private func statistics(_ table: LMDBTable) throws(StorageError) -> MDB_stat {
        var stat = MDB_stat()
        try check(settee_mdb_stat(txn, table.dbi, &stat), "reading the size of a table of \(environment.path)")
        return stat
    }
}

/// A position in a sorted LMDB table.
///
/// Public, as SPI, only so that its steps inline into the other modules'
/// loops over rows: the `@inlinable` methods of a `package` type are not
/// serialized, so each step would be two calls across the module boundary.
@_spi(LMDB) public struct LMDBCursor {
    @usableFromInline package let cursor: OpaquePointer
    @usableFromInline package let path: String

    @usableFromInline package typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    @inlinable
    package func get(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil) throws(StorageError) -> Entry? {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var v = MDB_val()
        let code = settee_mdb_cursor_get(cursor, &k, &v, op)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "reading from \(path)")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    @inlinable package func first() throws(StorageError) -> Entry? { try get(MDB_FIRST) }
    @inlinable package func last() throws(StorageError) -> Entry? { try get(MDB_LAST) }
    @inlinable package func next() throws(StorageError) -> Entry? { try get(MDB_NEXT) }
    @inlinable package func previous() throws(StorageError) -> Entry? { try get(MDB_PREV) }
    /// The entry whose key is `key`, or nil. From a positioned cursor, LMDB
    /// looks on the current page first: lookups in key order skip the descent
    /// from the root.
    @inlinable package func find(_ key: UnsafeRawBufferPointer) throws(StorageError) -> Entry? { try get(MDB_SET_KEY, key: key) }
    /// The first entry whose key is at or after `key`.
    @inlinable package func seek(atOrAfter key: UnsafeRawBufferPointer) throws(StorageError) -> Entry? { try get(MDB_SET_RANGE, key: key) }
    @inlinable package func seek(atOrAfter key: [UInt8]) throws(StorageError) -> Entry? {
        var k = MDB_val(mv_size: key.count, mv_data: nil)
        var v = MDB_val()
        let code = key.withUnsafeBytes { key in
            k.mv_data = UnsafeMutableRawPointer(mutating: key.baseAddress)
            return settee_mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        if code == MDB_NOTFOUND { return nil }
        try check(code, "reading from \(path)")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Writes `value` under `key` and leaves the cursor there. Puts in key
    /// order through one cursor find each key's page from the last one's
    /// rather than from the root; `append` (every key after the table's last)
    /// fills pages to the end.
    package func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, append: Bool = false) throws(StorageError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(settee_mdb_cursor_put(cursor, &k, &v, append ? UInt32(MDB_APPEND) : 0), "writing to \(path)")
    }

    /// Deletes the entry under the cursor.
    package func deleteCurrent() throws(StorageError) {
        try check(settee_mdb_cursor_del(cursor, 0), "deleting from \(path)")
    }
}
