import CSetteeLMDB
import Foundation

/// A transaction on an ``LMDBEnvironment``, valid only inside the closure that
/// received it. Values read through it point into the memory map: copy what
/// must outlive the transaction.
struct LMDBTransaction {
    let txn: OpaquePointer
    unowned let environment: LMDBEnvironment

    /// LMDB's id of this transaction: a write transaction's is one more than
    /// the last committed one's.
    var id: Int { mdb_txn_id(txn) }

    /// The value stored under `key`, or nil.
    func get(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws(StorageError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let code = mdb_get(txn, dbi, &k, &v)
        // A key LMDB cannot hold (empty, or past its size limit) is one no table has.
        if code == MDB_NOTFOUND || code == MDB_BAD_VALSIZE { return nil }
        try check(code, "reading from \(environment.path)")
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    func get(_ dbi: MDB_dbi, _ key: some ContiguousBytes) throws(StorageError) -> UnsafeRawBufferPointer? {
        let result: Result<UnsafeRawBufferPointer?, StorageError> = key.withUnsafeBytes { key in
            Result { () throws(StorageError) in try get(dbi, key) }
        }
        return try result.get()
    }

    func put(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, append: Bool = false) throws(StorageError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_put(txn, dbi, &k, &v, append ? UInt32(MDB_APPEND) : 0), "writing to \(environment.path)")
    }

    func put(_ dbi: MDB_dbi, _ key: some ContiguousBytes, _ value: some ContiguousBytes, append: Bool = false) throws(StorageError) {
        let result: Result<Void, StorageError> = key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                Result { () throws(StorageError) in try put(dbi, key, value, append: append) }
            }
        }
        try result.get()
    }

    /// Whether `key` sorts after every key of `dbi` (true for an empty table):
    /// ascending keys from there on may be written with `append`.
    func isAfterLastKey(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws -> Bool {
        try withCursor(dbi) { cursor in
            guard let last = try cursor.last() else { return true }
            return compareBytes(key, last.key) > 0
        }
    }

    func isAfterLastKey(_ dbi: MDB_dbi, _ key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { try isAfterLastKey(dbi, $0) }
    }

    /// Deletes `key`; returns whether it existed.
    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws(StorageError) -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let code = mdb_del(txn, dbi, &k, nil)
        if code == MDB_NOTFOUND { return false }
        try check(code, "deleting from \(environment.path)")
        return true
    }

    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: some ContiguousBytes) throws(StorageError) -> Bool {
        let result: Result<Bool, StorageError> = key.withUnsafeBytes { key in
            Result { () throws(StorageError) in try delete(dbi, key) }
        }
        return try result.get()
    }

    /// A cursor over `dbi`, closed when `body` returns.
    func withCursor<T>(_ dbi: MDB_dbi, _ body: (inout LMDBCursor) throws -> T) throws -> T {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "reading from \(environment.path)")
        defer { mdb_cursor_close(cursor) }
        var wrapped = LMDBCursor(cursor: cursor!, path: environment.path)
        return try body(&wrapped)
    }

    /// Removes every entry of `dbi`, keeping the table.
    func clear(_ dbi: MDB_dbi) throws(StorageError) {
        try check(mdb_drop(txn, dbi, 0), "clearing a table of \(environment.path)")
    }

    /// Number of entries in `dbi`.
    func count(_ dbi: MDB_dbi) throws(StorageError) -> Int {
        try statistics(dbi).ms_entries
    }

    /// Leaf pages of `dbi` (the pages its entries are on).
    func leafPages(_ dbi: MDB_dbi) throws(StorageError) -> Int {
        try statistics(dbi).ms_leaf_pages
    }

    /// Bytes of pages used by `dbi`.
    func bytes(_ dbi: MDB_dbi) throws(StorageError) -> Int {
        let stat = try statistics(dbi)
        return Int(stat.ms_psize) * (stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages)
    }

    private func statistics(_ dbi: MDB_dbi) throws(StorageError) -> MDB_stat {
        var stat = MDB_stat()
        try check(mdb_stat(txn, dbi, &stat), "reading the size of a table of \(environment.path)")
        return stat
    }
}

/// A position in a sorted LMDB table.
struct LMDBCursor {
    let cursor: OpaquePointer
    let path: String

    typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    private func get(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil) throws(StorageError) -> Entry? {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var v = MDB_val()
        let code = mdb_cursor_get(cursor, &k, &v, op)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "reading from \(path)")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    func first() throws(StorageError) -> Entry? { try get(MDB_FIRST) }
    func last() throws(StorageError) -> Entry? { try get(MDB_LAST) }
    func next() throws(StorageError) -> Entry? { try get(MDB_NEXT) }
    func previous() throws(StorageError) -> Entry? { try get(MDB_PREV) }
    /// The entry whose key is `key`, or nil. From a positioned cursor, LMDB
    /// looks on the current page first: lookups in key order skip the descent
    /// from the root.
    func find(_ key: UnsafeRawBufferPointer) throws(StorageError) -> Entry? { try get(MDB_SET_KEY, key: key) }
    /// The first entry whose key is at or after `key`.
    func seek(atOrAfter key: UnsafeRawBufferPointer) throws(StorageError) -> Entry? { try get(MDB_SET_RANGE, key: key) }
    func seek(atOrAfter key: [UInt8]) throws(StorageError) -> Entry? {
        var k = MDB_val(mv_size: key.count, mv_data: nil)
        var v = MDB_val()
        let code = key.withUnsafeBytes { key in
            k.mv_data = UnsafeMutableRawPointer(mutating: key.baseAddress)
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        if code == MDB_NOTFOUND { return nil }
        try check(code, "reading from \(path)")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Writes `value` under `key` and leaves the cursor there. Puts in key
    /// order through one cursor find each key's page from the last one's
    /// rather than from the root; `append` (every key after the table's last)
    /// fills pages to the end.
    func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, append: Bool = false) throws(StorageError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_cursor_put(cursor, &k, &v, append ? UInt32(MDB_APPEND) : 0), "writing to \(path)")
    }

    /// Deletes the entry under the cursor.
    func deleteCurrent() throws(StorageError) {
        try check(mdb_cursor_del(cursor, 0), "deleting from \(path)")
    }
}
