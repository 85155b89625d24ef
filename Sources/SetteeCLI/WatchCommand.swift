import SetteeCore
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
            With --query, the view's result is printed again each time a write (by any process, such as \
            settee put in another shell) or a reload changes it; \
            while its design document or view is missing (its file deleted), a not_found error is reported \
            on standard error once and the query resumes after the next reload. A file deleted and created \
            again within a second (git checkout, rm then cp) is compared by content, as any edit. \
            Runs until interrupted.
            """)

    @Option(name: .long, help: "The folder of .json design documents to watch.")
    var design: String

    @Option(name: .long, help: "Also print this view's (DESIGN/VIEW) result whenever it changes.", completion: .custom(ShellCompletion.views))
    var query: String?

    /// The view's query parameters, as `settee query` takes them (`--group`, `--startkey`, `--limit`…).
    @OptionGroup var parameters: ViewQueryParameters

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        if query == nil && !parameters.parameters.isEmpty { throw ValidationError("View query parameters need --query DESIGN/VIEW") }
    }

    func run() async throws {
        let folder = URL(fileURLWithPath: design)
        let query = query
        let options: ViewQueryOptions
        do { options = try ViewQueryOptions(parameters: parameters.parameters) } catch { try reportingErrors { throw error }; return }
        do {
            let db = try database.open()
            // Only the latest reload matters to a query waiting for its view to come back.
            let (loaded, loadedSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Self.watch(db, folder, loaded: loadedSink) }
                if let query {
                    group.addTask { try await Self.follow(query, options: options, in: db, reloads: loaded) }
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
            for error in reload.errors { ErrorReport.print(error) }
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

    /// Prints the view's result whenever it changes. A missing design
    /// document or view (its file deleted, the view taken out) does not end
    /// the watch: it is reported once, and the query starts again after
    /// each reload until the view is back.
    private static func follow(_ query: String, options: ViewQueryOptions, in db: Database, reloads: AsyncStream<Void>) async throws {
        var reloads = reloads.makeAsyncIterator()
        // After the first load, so that the view exists.
        guard await reloads.next() != nil else { return }
        var reported = false
        while true {
            do {
                for try await result in db.liveQuery(query, options: options) {
                    reported = false
                    printLine(["query": .string(query), "result": try JSONValue(parsing: result.json)])
                }
                return
            } catch {
                guard SetteeErrorCode.notFound ~= error else { throw error }
                if !reported {
                    let reason = (error as? DocumentError)?.reason ?? "\(error)"
                    printError(JSONValue.object([
                        ("error", "not_found"), ("reason", .string(reason)), ("query", .string(query)),
                        ("waiting", "for a reload that brings the view back"),
                    ]).jsonText)
                    reported = true
                }
                guard await reloads.next() != nil, !Task.isCancelled else { return }
            }
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
                        try db.updateIndexes(progress: bar.update)
                    } catch let error as DesignDocumentErrors {
                        // Stored design documents the watched folder does not hold (written with put):
                        // the others are indexed, and watching goes on.
                        bar.finish()
                        ErrorReport.printSkipped(error.errors)
                    }
                    bar.finish()
                })
            }
        }
    }
}
