import ArgumentParser
import Foundation
import Settee

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Load a folder of design documents, then reload each one whenever its file changes.",
        discussion: """
            Prints one JSON line per reload: the design documents loaded (with the views whose signature \
            changed), removed (their file was deleted) and refused. A refused edit is reported on standard \
            error with its file, design document, view and line, and the version loaded before stays live. \
            After each good edit the changed views' indexes are built (a progress bar shows on standard error). \
            With --query, the view's result is printed again each time a write or a reload changes it. \
            Runs until interrupted.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(name: .long, help: "The folder of .json design documents to watch.")
    var design: String

    @Option(name: .long, help: "Also print this view's (DESIGN/VIEW) result whenever it changes.")
    var query: String?

    func run() async throws {
        let folder = URL(fileURLWithPath: design)
        let query = query
        do {
            let db = try database.open()
            let (loaded, loadedSink) = AsyncStream.makeStream(of: Void.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Self.watch(db, folder, loaded: loadedSink) }
                if let query {
                    group.addTask {
                        // After the first load, so that the view exists.
                        for await _ in loaded { break }
                        for try await result in db.liveQuery(query) {
                            printLine(["query": .string(query), "result": try JSONValue(parsing: result.json)])
                        }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        } catch {
            try reportingErrors { throw error }
        }
    }

    private static func watch(_ db: Database, _ folder: URL, loaded: AsyncStream<Void>.Continuation) async throws {
        for try await reload in db.watchDesignDocuments(in: folder) {
            for error in reload.errors { printError("settee: \(error)") }
            printLine([
                "loaded": .array(reload.loaded.map { loaded in
                    ["file": .string(loaded.file), "id": .string(loaded.designDocument.id),
                     "changed_views": .array(loaded.changedViews.map(JSONValue.string)),
                     "removed_views": .array(loaded.removedViews.map(JSONValue.string))]
                }),
                "removed": .array(reload.removed.map { ["file": .string($0.file), "id": .string($0.designDocument)] }),
                "errors": .array(reload.errors.map { .string($0.description) }),
            ])
            if !reload.loaded.isEmpty { try await buildIndexes(db) }
            loaded.yield()
        }
    }

    /// Brings the indexes up to date after a reload: only views with a new signature have much to do.
    private static func buildIndexes(_ db: Database) async throws {
        // A blocking build: on a dispatch thread, not one of Swift's cooperative ones.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    let bar = ProgressBar(label: "indexing", unit: "docs")
                    do {
                        try db.updateIndexes { progress in
                            bar.update(done: progress.processed, fraction: Double(progress.processed) / Double(max(progress.total, 1)))
                        }
                    } catch let error as DesignDocumentErrors {
                        // Stored design documents the watched folder does not hold (written with put):
                        // the others are indexed, and watching goes on.
                        bar.finish()
                        for problem in error.errors { printError("settee: skipped a design document that cannot be used: \(problem)") }
                    }
                    bar.finish()
                })
            }
        }
    }
}
