import Foundation
import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews

/// What one reload of a watched folder of design documents did: see
/// ``Database/watchDesignDocuments(in:removalDelay:)``.
public struct DesignDocumentReload: Sendable {
    /// A design document file that was loaded: checked, then stored.
    public struct Loaded: Sendable {
        /// The file's path.
        public var file: String
        /// The design document now live.
        public var designDocument: DesignDocument
        /// Views whose signature is new (their index is built on their next
        /// query); the others keep their indexes.
        public var changedViews: [String]
        /// Views the previous version had and this one has not.
        public var removedViews: [String]
    }

    /// A design document whose file was deleted (and stayed away for the
    /// watch's removal delay), and which was deleted from the database.
    public struct Removed: Sendable {
        /// The file's path.
        public var file: String
        /// The design document's id.
        public var designDocument: String
    }

    /// Files whose new content was loaded.
    public var loaded: [Loaded] = []
    /// Files that were deleted (or moved away).
    public var removed: [Removed] = []
    /// Files whose new content was refused, with where the problem is. The
    /// version loaded before stays live.
    public var errors: [DesignDocumentError] = []

    /// Whether nothing changed.
    public var isEmpty: Bool { loaded.isEmpty && removed.isEmpty && errors.isEmpty }
}

/// The design documents loaded from one folder, by file, and the content each
/// file had when it was last read.
final class DesignDocumentFolder: @unchecked Sendable {
    private struct FileState {
        /// SHA-256 of the content last read (loaded or refused).
        var digest: String
        /// The design document the file last loaded, if any.
        var designDocument: String?
        /// When a scan first found the file gone, while it may yet come back.
        var missingSince: ContinuousClock.Instant?
    }

    let folder: URL
    private let database: Database
    /// How long a file stays gone before its design document is deleted.
    let removalDelay: Duration
    private var files: [String: FileState] = [:]

    init(folder: URL, database: Database, removalDelay: Duration) {
        self.folder = folder
        self.database = database
        self.removalDelay = removalDelay
    }

    /// How long until a file found gone has stayed away for ``removalDelay``
    /// (the next scan then deletes its design document), or nil when none is gone.
    var untilNextRemoval: Duration? {
        let now = ContinuousClock.now
        return files.values.compactMap(\.missingSince).min().map { max(.zero, $0 + removalDelay - now) }
    }

    /// Loads every file whose content changed since the last scan, and deletes
    /// the design documents of files that have been gone for ``removalDelay``.
    ///
    /// A file replaced by deleting it and creating it again (`git checkout`,
    /// `rm; cp`, some editors) is gone for a moment: with the same content
    /// when it comes back, it is no change at all, rather than a deleted
    /// design document whose indexes are dropped and then built from nothing.
    func scan() throws -> DesignDocumentReload {
        var reload = DesignDocumentReload()
        let present: [URL]
        do {
            present = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "json" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
        } catch {
            reload.errors.append(DesignDocumentError(file: folder.path, reason: "cannot read the folder: \((error as NSError).localizedDescription)"))
            return reload
        }
        for file in present {
            guard let data = try? Data(contentsOf: file) else { continue }  // gone again since the listing
            let digest = SHA256.hexDigest(data)
            files[file.path]?.missingSince = nil
            let previous = files[file.path]
            if previous?.digest == digest { continue }
            files[file.path] = FileState(digest: digest, designDocument: previous?.designDocument)
            do {
                let design = try database.designDocument(file: file, contents: data)
                let stored = try database.designDocument(design.id)
                // By the names' bytes, as views are told apart.
                let before = Dictionary((stored?.views ?? []).map { (Array($0.name.utf8), $0.signature) }, uniquingKeysWith: { first, _ in first })
                try database.store(design)
                if let old = previous?.designDocument, old != design.id, !claimed(old, except: file.path) {
                    try deleteDesignDocument(old)
                }
                files[file.path]?.designDocument = design.id
                reload.loaded.append(DesignDocumentReload.Loaded(
                    file: file.path, designDocument: design,
                    changedViews: design.views.filter { before[Array($0.name.utf8)] != $0.signature }.map(\.name),
                    removedViews: before.keys.filter { design.view(String(decoding: $0, as: UTF8.self)) == nil }
                        .sorted { $0.lexicographicallyPrecedes($1) }.map { String(decoding: $0, as: UTF8.self) }))
            } catch let error as DesignDocumentError {
                reload.errors.append(error)
            }
        }
        let kept = Set(present.map(\.path))
        let now = ContinuousClock.now
        for (path, state) in files.sorted(by: { $0.key < $1.key }) where !kept.contains(path) {
            guard let missingSince = state.missingSince else {
                files[path]?.missingSince = now
                continue
            }
            guard now - missingSince >= removalDelay else { continue }
            files[path] = nil
            guard let id = state.designDocument, !claimed(id, except: path) else { continue }
            try deleteDesignDocument(id)
            reload.removed.append(DesignDocumentReload.Removed(file: path, designDocument: id))
        }
        return reload
    }

    /// Whether another file loaded this design document.
    private func claimed(_ id: String, except path: String) -> Bool {
        files.contains { $0.key != path && $0.value.designDocument == id }
    }

    private func deleteDesignDocument(_ id: String) throws {
        do {
            try database.delete(id, revision: nil)
        } catch SetteeErrorCode.notFound {
            // Already gone.
        }
    }
}
