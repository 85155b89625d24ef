public import SetteeCore
import CSetteeLMDB
import CSetteeLMDBGuard
import Foundation

/// A failure of the storage engine (LMDB), with what was being done.
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// LMDB's result code, or an errno value.
    public var code: Int32
    /// What Settee was doing, e.g. "opening /data/db".
    public var operation: String
    /// What is wrong in Settee's words, where the storage engine's words for
    /// `code` would not say it (a truncated file, a lock held by another
    /// process); nil for the engine's own failures.
    public var explanation: String?

    public init(code: Int32, operation: String, explanation: String? = nil) {
        self.code = code
        self.operation = operation
        self.explanation = explanation
    }

    /// What is wrong: ``explanation`` when there is one, else the storage
    /// engine's own words for `code`.
    public var reason: String {
        explanation ?? String(cString: mdb_strerror(code))
    }

    public var description: String {
        // "there is no Settee database at /x" says where already: not "- while opening the database at /x" again.
        if let explanation, let path = operation.split(separator: " ").last, path.hasPrefix("/"), explanation.contains(path) {
            return explanation
        }
        return "\(reason) - while \(operation)"
    }

    /// The database files grew past what the disk or the size limit allows.
    public var isFull: Bool {
        code == MDB_MAP_FULL || code == ENOSPC
    }

    /// The database's files are damaged: truncated, a page or record that
    /// does not decode.
    public var isDamage: Bool {
        code == MDB_CORRUPTED || code == MDB_PAGE_NOTFOUND || code == MDB_INVALID
    }

    /// A record of the database that is not what Settee wrote: too short for
    /// its layout, or not JSON where JSON belongs.
    /// A damaged index or record found while doing `operation`.
    package static func damaged(_ operation: String, explanation: String? = nil) -> StorageError {
        StorageError(code: MDB_CORRUPTED, operation: operation, explanation: explanation)
    }

    /// What the guard saw when LMDB's call stopped on a damaged page
    /// (an assertion, a fault), in words; nil for LMDB's own answers.
    @usableFromInline
    package static func damageSeen(_ code: Int32) -> String? {
        guard code == MDB_CORRUPTED, let seen = settee_lmdb_take_damage(), seen.pointee != 0 else { return nil }
        return "the database is damaged: " + String(cString: seen)
    }

    package static func damagedRecord(_ what: String, in path: String, _ problem: String) -> StorageError {
        StorageError(code: MDB_CORRUPTED, operation: "reading \(what) in \(path)",
                     explanation: "the database is damaged: \(problem)")
    }
}

@inlinable
package func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(StorageError) {
    if code != 0 { throw StorageError(code: code, operation: operation(), explanation: StorageError.damageSeen(code)) }
}

extension StorageError: SetteeError {
    /// What kind of failure this is.
    public var errorCode: SetteeErrorCode {
        if isFull { return .storageFull }
        if isDamage { return .databaseDamaged }
        switch code {
        case MDB_INCOMPATIBLE: return .notSetteeDatabase
        case EBUSY: return .busy
        case EROFS: return .readOnly
        case EAGAIN: return .databaseGrew
        case EBADF: return .closed
        case ENOENT: return .notFound
        default: return .storageFailure
        }
    }
}
