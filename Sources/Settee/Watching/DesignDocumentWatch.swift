public import Foundation
import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews

/// A folder of design documents kept live in a database: the `AsyncSequence`
/// that ``Database/watchDesignDocuments(in:removalDelay:)`` returns.
///
/// The first element is the initial load of every `.json` file in the folder.
/// After that, each time a file is written, moved in, moved away or deleted,
/// the folder is read again and a new element says what happened:
///
/// - A file whose content changed is parsed and checked (every function
///   compiled). A good edit is stored at once, replacing the previous version:
///   views whose signature changed get a new index on their next query, the
///   others keep theirs, and live queries on the design document run again.
/// - A broken edit is refused with its file, design document, view and line
///   (``DesignDocumentReload/errors``); the version loaded before stays live.
/// - A deleted file deletes its design document once it has stayed away for
///   the removal delay (one second unless told otherwise); its indexes are
///   removed and live queries on its views end with `not_found`. A file
///   deleted and created again within the delay (`git checkout`, `rm; cp`)
///   is compared by content as any edit: the same content is no change.
///
/// Iteration does the work: nothing is reloaded between calls to `next()`, and
/// ending the loop stops watching.
///
/// ```swift
/// for try await reload in db.watchDesignDocuments(in: URL(filePath: "DesignDocs")) {
///     for error in reload.errors { logger.error("\(error)") }
/// }
/// ```
public struct DesignDocumentWatch: AsyncSequence, Sendable {
    /// Each element is a ``DesignDocumentReload``.
    public typealias Element = DesignDocumentReload

    let database: Database
    let folder: URL
    let removalDelay: Duration

    /// Starts an iteration; see the type's description for what it yields.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(database: database, folder: folder, removalDelay: removalDelay)
    }

    /// The iteration's state: the reloads it has seen. Use it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let database: Database
        private let state: DesignDocumentFolder
        private var watcher: FolderWatcher?
        private var events: AsyncStream<Void>.Iterator?

        init(database: Database, folder: URL, removalDelay: Duration) {
            self.database = database
            state = DesignDocumentFolder(folder: folder, database: database, removalDelay: removalDelay)
        }

        /// The initial load (the first call), then the next reload that changed something.
        /// - Returns: nil once the calling task is cancelled.
        /// - Throws: ``DesignDocumentError`` when the folder cannot be watched;
        ///   a storage error when a design document cannot be written.
        public mutating func next() async throws -> DesignDocumentReload? {
            let state = state
            if watcher == nil {
                // Watch first, then read: an edit made during the first read is not missed.
                let watcher = try FolderWatcher(folder: state.folder)
                self.watcher = watcher
                events = watcher.events.makeAsyncIterator()
                return try await database.background { try state.scan() }
            }
            while true {
                guard await events?.next() != nil, !Task.isCancelled else { return nil }
                let reload = try await database.background { try state.scan() }
                // A file gone is looked at again once it has stayed away long enough.
                if let delay = state.untilNextRemoval { watcher?.wake(after: delay) }
                if !reload.isEmpty { return reload }
            }
        }
    }
}

extension Database {
    /// Loads the design documents of a folder, then reloads each one whose
    /// file changes, for as long as the returned sequence is iterated. See
    /// ``DesignDocumentWatch``.
    ///
    /// - Parameters:
    ///   - folder: The folder of design document files (`.json`).
    ///   - removalDelay: How long a file must stay deleted before its
    ///     design document is deleted: a file replaced by deleting it and
    ///     creating it again is not taken for a deletion.
    public func watchDesignDocuments(in folder: URL, removalDelay: Duration = .seconds(1)) -> DesignDocumentWatch {
        DesignDocumentWatch(database: self, folder: folder, removalDelay: removalDelay)
    }
}
