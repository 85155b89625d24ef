import CSetteeLMDB
import Foundation

/// A failure of the storage engine (LMDB), with what was being done.
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// LMDB's result code, or an errno value.
    public var code: Int32
    /// What Settee was doing, e.g. "opening /data/db".
    public var operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// The storage engine's own words for `code`.
    public var reason: String {
        String(cString: mdb_strerror(code))
    }

    public var description: String {
        "\(reason) - while \(operation)"
    }

    /// The database files grew past what the disk or the size limit allows.
    public var isFull: Bool {
        code == MDB_MAP_FULL || code == ENOSPC
    }
}

@inline(__always)
func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(StorageError) {
    if code != 0 { throw StorageError(code: code, operation: operation()) }
}
