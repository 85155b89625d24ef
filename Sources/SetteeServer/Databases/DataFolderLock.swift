import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
import HTTPTypes
#endif

/// The exclusive lock a running server holds on its data folder
/// (`DIR/_settee/serve.lock`, `flock`): one server at a time serves a folder.
///
/// Two servers on one folder would each keep their own open databases and
/// caches (security objects, a database deleted and created again by the
/// other), and answer writes the other cannot see. The lock goes with the
/// process: a server killed leaves nothing to clean up. Other processes
/// (the `settee` command's imports, queries) may still open the databases,
/// which LMDB shares safely between processes.
final class DataFolderLock: Sendable {
    /// The lock file's descriptor; -1 once released.
    private let descriptor: Mutex<Int32>

    /// Takes the lock of `folder`.
    /// - Throws: `data_folder_in_use` when another server holds it.
    init(folder: URL) throws {
        let settee = folder.appendingPathComponent("_settee", isDirectory: true)
        try FileManager.default.createDirectory(at: settee, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = settee.appendingPathComponent("serve.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CouchError(.internalServerError, "file_error", "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK
                ? "another settee serve is serving \(folder.path): a data folder is served by one server at a time"
                : "cannot lock \(path): \(String(cString: strerror(errno)))"
            close(descriptor)
            throw CouchError(.internalServerError, "data_folder_in_use", reason)
        }
        self.descriptor = Mutex(descriptor)
    }

    /// Gives the folder up: another server may serve it from now on,
    /// whoever still holds this lock.
    func release() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    deinit {
        release()
    }
}
