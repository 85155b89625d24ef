public import Foundation
import Logging
import SetteeCore
import SetteeStorage
import SetteeJavaScript
public import SetteeViews

/// What `settee info` shows of one view.
public struct ViewInfo: Sendable, Equatable {
    /// `DDOC/VIEW`.
    public var path: String
    /// The index's version: the hash of what decides its content.
    public var signature: String
    /// The database sequence the index reflects.
    public var indexedSequence: UInt64
    public var rowCount: Int
    /// Bytes the index's tables take.
    public var bytes: Int
    /// Map calls that threw while building the index.
    public var mapErrors: Int
}

extension Database {
    // MARK: Design documents

    /// Loads design documents from a `.json` file or a folder of them, checks
    /// them (every function compiles, built-in reducers exist, the language is
    /// javascript, every view has a map), and stores them in the database as
    /// `_design/` documents, all in one transaction: nothing is stored unless
    /// all are valid, and a crash mid-load leaves every one as it was.
    ///
    /// - Returns: The design documents loaded.
    /// - Throws: ``DesignDocumentErrors`` naming file, design document, view and line.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func loadDesignDocuments(from url: URL) throws -> [DesignDocument] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw DesignDocumentErrors(errors: [DesignDocumentError(file: url.path, reason: "no such file or folder")])
        }
        let files = isDirectory.boolValue
            ? try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "json" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
            : [url]
        var documents: [DesignDocument] = []
        var errors: [DesignDocumentError] = []
        for file in files {
            do {
                documents.append(try designDocument(file: file, contents: try readDesignDocumentFile(file)))
            } catch let error as DesignDocumentError {
                errors.append(error)
            } catch {
                errors.append(DesignDocumentError(file: file.path, reason: "\(error)"))
            }
        }
        guard errors.isEmpty else { throw DesignDocumentErrors(errors: errors) }
        do {
            try write(runsBodyOnce: false) { batch in
                for document in documents { try store(document, in: batch) }
            }
        } catch var error as DesignDocumentError {
            // Refused when stored (the index limit): name the file it came from.
            if let index = documents.lastIndex(where: { $0.id == error.designDocument }) { error.file = files[index].path }
            throw DesignDocumentErrors(errors: [error])
        }
        try removeUnusedIndexes()
        return documents
    }

    /// Refuses a write of design documents (`written`, by id) after which the
    /// database's design documents, as `transaction` sees them, would need
    /// more distinct indexes than it can hold (``ViewIndexStore/maximumIndexes``):
    /// past it, every command that opens a table fails until the design
    /// document is deleted. Views with the same definition share an index.
    /// Thrown inside the write, so nothing is stored.
    func checkIndexLimit(written: [String], in transaction: LMDBTransaction) throws {
        let signatures = try indexSignatures(in: transaction)
        guard signatures.count > ViewIndexStore.maximumIndexes else { return }
        throw DesignDocumentError(designDocument: written.last, reason: Self.overIndexLimit(signatures.count))
    }

    /// Refuses, before it is written, a design document after which the
    /// database's design documents would need more distinct indexes than it
    /// can hold (what ``checkIndexLimit(written:in:)`` checks after a write,
    /// for an import that writes many documents in one transaction and
    /// refuses only the one).
    ///
    /// A design document that could not be used is refused too (see
    /// ``DocumentEdit/checkDesignDocument(databaseIsPartitioned:)``).
    func refuseOverIndexLimit(_ edit: DocumentEdit, in transaction: LMDBTransaction) throws {
        let written: DesignDocument?
        let partitioned = try edit.id?.hasPrefix("_design/") == true && DatabaseProperties.isPartitioned(store, in: transaction)
        do {
            written = try edit.checkDesignDocument(databaseIsPartitioned: partitioned)
        } catch {
            throw DocumentError(.invalidDesignDocument, error.description, id: edit.id)
        }
        guard let design = written else { return }
        let id = design.id
        var signatures = try indexSignatures(in: transaction, excluding: id)
        for view in design.views { signatures.insert(view.signature) }
        guard signatures.count > ViewIndexStore.maximumIndexes else { return }
        throw DocumentError(.invalidDesignDocument, Self.overIndexLimit(signatures.count), id: id)
    }

    /// The distinct indexes the design documents `transaction` sees need
    /// (views with the same definition share one), less `excluded`'s.
    private func indexSignatures(in transaction: LMDBTransaction, excluding excluded: String? = nil) throws -> Set<String> {
        var signatures = Set<String>()
        let partitioned = try DatabaseProperties.isPartitioned(store, in: transaction)
        for record in try store.designDocumentRecords(in: transaction) where record.id != excluded {
            // Not kept in the cache: the write may yet be rolled back.
            guard let design = designDocumentCache.cached(record.id, revision: record.revision)
                ?? (try? DesignDocument(json: try record.value, databaseIsPartitioned: partitioned)) else { continue }
            for view in design.views { signatures.insert(view.signature) }
        }
        return signatures
    }

    private static func overIndexLimit(_ count: Int) -> String {
        "the database's design documents would have \(count) distinct views, more than the "
            + "\(ViewIndexStore.maximumIndexes) it can index (each index takes \(ViewIndexStore.tablesPerIndex) of "
            + "\(ViewIndexStore.tableHandles) table handles); nothing was stored: remove views or design documents"
    }

    /// A design document file's contents, unless it is larger than a design
    /// document may be: then it is not read.
    func readDesignDocumentFile(_ file: URL) throws -> Data {
        if let size = try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int {
            try checkDesignDocumentSize(size, file: file)
        }
        return try Data(contentsOf: file)
    }

    private func checkDesignDocumentSize(_ bytes: Int, file: URL) throws(DesignDocumentError) {
        let limit = options.maximumDesignDocumentBytes
        guard bytes > limit else { return }
        throw DesignDocumentError(file: file.path, reason: "\(SetteeErrorCode.documentTooLarge): the file is \(bytes) bytes, over the limit "
                                  + "of \(limit) bytes for a design document (Database.Options.maximumDesignDocumentBytes)")
    }

    /// Refuses a stored design document larger than a design document may be
    /// now (written before the limit, or under a higher one).
    private func checkStoredDesignDocumentSize(_ bytes: Int, id: String) throws(DocumentError) {
        let limit = options.maximumDesignDocumentBytes
        guard bytes > limit else { return }
        throw DocumentError(.documentTooLarge, "the stored design document is \(bytes) bytes of JSON, over the limit of \(limit) bytes "
                            + "(Database.Options.maximumDesignDocumentBytes); raise it to use the design document, or replace it", id: id)
    }

    /// Parses and checks the design document in a file's contents (see `loadDesignDocuments(from:)`).
    func designDocument(file: URL, contents data: Data) throws(DesignDocumentError) -> DesignDocument {
        try checkDesignDocumentSize(data.count, file: file)
        let json: JSONValue
        do {
            json = try data.withUnsafeBytes { bytes throws(JSONParseError) in try JSONParser.parse(bytes) }
        } catch let error as JSONParseError {
            throw DesignDocumentError(file: file.path, line: error.line, column: error.column, reason: "invalid JSON: \(error.reason)")
        } catch {
            throw DesignDocumentError(file: file.path, reason: "invalid JSON: \(error)")
        }
        do {
            let document = try DesignDocument(json: json, file: file.path, databaseIsPartitioned: (try? isPartitioned()) ?? false)
            try check(document, file: file.path)
            return document
        } catch var error as DesignDocumentError {
            // Point at the file's line too, where the view (or its function) is written.
            if let view = error.view {
                error.fileLine = JSONKeyPathLocator.line(of: ["views", view] + (error.function.map { [$0] } ?? []), in: data)
            }
            throw error
        } catch {
            throw DesignDocumentError(file: file.path, designDocument: json["_id"]?.stringValue, reason: "\(error)")
        }
    }

    /// Compiles every function of a design document on the JavaScript engine.
    func check(_ document: DesignDocument, file: String?) throws {
        let worker = try javaScript().nextWorker()
        try worker.run { context in
            /// Compiles one function; its error names the design document, the view (if any) and the function.
            func compile(_ source: String, view: String?, _ function: String, library: String? = nil) throws {
                do {
                    _ = try context.compile(source, name: "\(document.id)\(view.map { "/" + $0 } ?? "") \(function)", library: library)
                } catch {
                    throw DesignDocumentError(file: file, designDocument: document.id, view: view, function: function,
                                              line: error.line, column: error.column, reason: error.message)
                }
            }
            // Views mapped in Swift (find's JSON indexes) have no JavaScript to compile.
            for view in document.views where !view.isSwift {
                try compile(view.map, view: view.name, "map", library: view.library?.jsonText)
                if let reduce = view.reduce, !reduce.hasPrefix("_") {
                    try compile(reduce, view: view.name, "reduce")
                }
            }
            if let source = document.validateDocumentUpdate {
                try compile(source, view: nil, "validate_doc_update")
            }
        }
    }

    /// Writes a design document unless the database already holds the same
    /// content, byte for byte (`JSONValue`'s `==` compares strings as Swift
    /// does, taking a view renamed from `é` composed to decomposed for no change).
    func store(_ document: DesignDocument) throws {
        try write(runsBodyOnce: false) { try store(document, in: $0) }
    }

    /// Writes a design document in `batch` unless it holds the same content.
    private func store(_ document: DesignDocument, in batch: WriteBatch) throws {
        var members = (document.json.objectValue ?? []).filter { $0.key != "_rev" }
        if let current = try batch.document(document.id) {
            let stored = (try current.value.objectValue ?? []).filter { $0.key != "_rev" }
            if JSONValue.object(stored).jsonText.utf8.elementsEqual(JSONValue.object(members).jsonText.utf8) { return }
            members.append((key: "_rev", value: .string(current.revision.description)))
        }
        try batch.put(JSONValue.object(members).jsonText)
    }

    /// The design document `_design/NAME` stored in the database.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func designDocument(_ name: String) throws -> DesignDocument? {
        let id = name.hasPrefix("_design/") ? name : "_design/" + name
        guard let document = try document(id) else { return nil }
        return try designDocumentCache.parsed(document, databaseIsPartitioned: isPartitioned())
    }

    /// Every design document stored in the database.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func designDocuments() throws -> [DesignDocument] {
        let partitioned = try isPartitioned()
        return try store.designDocumentRecords().compactMap { try? designDocumentCache.parsed($0, databaseIsPartitioned: partitioned) }
    }

    // MARK: Queries

    /// Queries a view (`DDOC/VIEW`, or the name of a view written in Swift:
    /// see ``register(_:)``) with CouchDB's options, updating its index first
    /// unless `update` says otherwise.
    ///
    /// - Throws: ``QueryError`` for invalid options (CouchDB's messages),
    ///   ``DocumentError`` (`not_found`) for a missing design document or view.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func query(_ path: String, options: ViewQueryOptions = ViewQueryOptions(), progress: (IndexProgress) -> Void = { _ in }) throws -> ViewResult {
        try ViewResult.collected { header, row in
            try query(path, options: options, progress: progress, storedReductions: true, streaming: false, header: header, row: row)
        }
    }

    /// A query of `path`: `DDOC/VIEW`, or the name of a view written in Swift.
    func query(_ path: String, options: ViewQueryOptions, progress: (IndexProgress) -> Void, storedReductions: Bool, streaming: Bool,
               header: (ViewResultHeader) throws -> Void, row: (consuming ViewRow) throws -> Void) throws {
        guard path.utf8.contains(UInt8(ascii: "/")) else {
            return try retryingWhenIndexRemoved {
                try querySwiftView(path, options: options, progress: progress, storedReductions: storedReductions, streaming: streaming,
                                   header: header, row: row)
            }
        }
        let (design, view) = try Self.splitViewPath(path)
        try query(designDocument: design, view: view, options: options, progress: progress, storedReductions: storedReductions,
                  streaming: streaming, header: header, row: row)
    }

    /// ``forEachRow(_:options:progress:header:_:)-97thd`` of the view `view` of the
    /// design document `designDocument` (its id or name), named apart: no path to write and split.
    func forEachRow(designDocument name: String, view viewName: String, options: ViewQueryOptions, _ body: (ViewRow) throws -> Void) throws {
        try query(designDocument: name, view: viewName, options: options, progress: { _ in }, storedReductions: true, streaming: true,
                  header: { _ in }, row: { try body($0) })
    }

    /// Queries the view `view` of the design document `designDocument`.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func query(designDocument name: String, view viewName: String, options: ViewQueryOptions = ViewQueryOptions(),
                      progress: (IndexProgress) -> Void = { _ in }) throws -> ViewResult {
        try query(designDocument: name, view: viewName, options: options, progress: progress, storedReductions: true)
    }

    /// A query that may be told to walk every row instead of reading stored
    /// chunk reductions (what tests compare the chunks with).
    func query(designDocument name: String, view viewName: String, options: ViewQueryOptions,
               progress: (IndexProgress) -> Void, storedReductions: Bool) throws -> ViewResult {
        try ViewResult.collected { header, row in
            try query(designDocument: name, view: viewName, options: options, progress: progress, storedReductions: storedReductions,
                      streaming: false, header: header, row: row)
        }
    }
    /// Queries a view as ``query(_:options:progress:)-1cn0a`` does, handing over
    /// the result as it is read instead of holding it: `header` once (total
    /// rows, offset, update sequence), then `body` with each row in order.
    /// Memory stays the same however many rows the query returns, so this is
    /// the way to read a large result, `include_docs` or not:
    ///
    /// ```swift
    /// try db.forEachRow("app/by_city", options: ViewQueryOptions(parameters: [("include_docs", "true")])) { row in
    ///     try export(row.documentJSON!)
    /// }
    /// ```
    ///
    /// The rows are read in one read transaction, the same snapshot
    /// throughout, on the calling thread: while `body` runs, writers go on,
    /// but the pages they replace cannot be reused until the call returns, so
    /// a slow consumer of a long result lets the database file grow meanwhile.
    /// A row is valid after `body` returns (its strings are its own).
    ///
    /// - Parameters:
    ///   - path: The view, as `DDOC/VIEW`.
    ///   - options: CouchDB's options, with the same meaning as for a query.
    ///   - progress: Called while the view's index is brought up to date first.
    ///   - header: Called once, before the first row.
    ///   - body: Called with each row; an error it throws ends the query and is rethrown.
    /// - Throws: As ``query(_:options:progress:)-1cn0a``.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func forEachRow(_ path: String, options: ViewQueryOptions = ViewQueryOptions(), progress: (IndexProgress) -> Void = { _ in },
                           header: (ViewResultHeader) throws -> Void = { _ in }, _ body: (ViewRow) throws -> Void) throws {
        try query(path, options: options, progress: progress, storedReductions: true, streaming: true, header: header, row: { try body($0) })
    }

    /// `DDOC/VIEW` split at its slash.
    private static func splitViewPath(_ path: String) throws -> (designDocument: String, view: String) {
        guard let slash = path.utf8.firstIndex(of: UInt8(ascii: "/")), slash != path.utf8.startIndex,
              path.utf8.index(after: slash) != path.utf8.endIndex else {
            throw QueryError(error: "bad_request", reason: "a view is named DESIGN/VIEW, not \"\(path)\"")
        }
        return (String(path[..<slash]), String(path[path.utf8.index(after: slash)...]))
    }

    /// Answers a query, handing over its header and rows as they are read.
    ///
    /// Another process may edit the design document and remove the index
    /// this query builds or reads: the query starts again from the design
    /// document as it is then (the edited version's index). That happens
    /// before any row is handed over.
    private func query(designDocument name: String, view viewName: String, options: ViewQueryOptions,
                       progress: (IndexProgress) -> Void, storedReductions: Bool, streaming: Bool,
                       header: (ViewResultHeader) throws -> Void, row: (consuming ViewRow) throws -> Void) throws {
        try retryingWhenIndexRemoved {
            try queryOnce(designDocument: name, view: viewName, options: options, progress: progress,
                          storedReductions: storedReductions, streaming: streaming, header: header, row: row)
        }
    }

    /// Runs `body` again, from the design documents as they are then, when
    /// another process removed an index it was using (by editing a design
    /// document): up to five times in all.
    private func retryingWhenIndexRemoved<T>(_ body: () throws -> T) throws -> T {
        var attempts = 0
        while true {
            do {
                return try body()
            } catch let error as IndexRemovedError {
                attempts += 1
                guard attempts < 5 else { throw error }
                logger.info("an index was removed while in use; starting again", metadata: ["view": "\(error.view)"])
            }
        }
    }

    /// Compiles a stored design document's functions, once per revision: one
    /// written with put() was never compiled, and its errors are said with its
    /// id and view, not mid-indexing.
    private func compileOnce(_ design: DesignDocument, revision: Revision) throws {
        guard !designDocumentCache.isChecked(design.id, revision: revision) else { return }
        try check(design, file: nil)
        designDocumentCache.markChecked(design.id, revision: revision)
    }

    /// The views nearest to `path` (`DDOC/VIEW`, or a bare name): the
    /// stored design documents' views as `DDOC/VIEW`, a view whose own name
    /// is the name asked for first, and the views written in Swift.
    private func viewPathSuggestions(near path: String) throws -> [String] {
        let designs = (try? designDocuments()) ?? []
        let paths = designs.flatMap { design in design.views.map { "\(design.id.dropFirst("_design/".count))/\($0.name)" } }
            + swiftViews.all.map(\.name)
        let exact = paths.filter { $0.split(separator: "/").last.map(String.init) == path }
        return Array((exact + ViewNameSuggestions.nearest(to: path, in: paths).filter { !exact.contains($0) }).prefix(3))
    }

    /// One run of a query: the design document as it is now, its index
    /// brought up to date (unless told otherwise), the answer.
    private func queryOnce(designDocument name: String, view viewName: String, options: ViewQueryOptions,
                           progress: (IndexProgress) -> Void, storedReductions: Bool, streaming: Bool,
                           header: (ViewResultHeader) throws -> Void, row: (consuming ViewRow) throws -> Void) throws {
        let design: DesignDocument, revision: Revision
        do {
            (design, revision) = try currentDesignDocument(name)
        } catch var error as DocumentError where error.code == .notFound {
            // A misspelt design document: the views whose paths are nearest.
            error.view = viewName
            error.suggestions = try viewPathSuggestions(near: "\(name.hasPrefix("_design/") ? String(name.dropFirst(8)) : name)/\(viewName)")
            throw error
        }
        guard let view = design.view(viewName) else {
            throw DocumentError.missingNamedView(viewName, in: design)
        }
        let (options, partitionPrefix) = try partitionQuery(options, view: view)
        // All views of the design document share one pass over the changes.
        try answer(view, updating: design.views, options: options, progress: progress, storedReductions: storedReductions,
                   streaming: streaming, partitionPrefix: partitionPrefix, header: header, row: row) {
            try checkOnce(design, revision: revision)
        }
    }

    /// Reads the rows of the view `view` of the design document
    /// `designDocument` (its id or name) that `scan` asks for, each with its
    /// document when asked for: a `find` index's read, without a view
    /// query's options. With `update`, the design document's indexes are
    /// brought up to date first; `partition` is the partition a partitioned
    /// view's rows are read in.
    func readIndexEntries(designDocument name: String, view viewName: String, _ scan: IndexScan, update: Bool, conflicts: Bool,
                          partition: String?, progress: (IndexProgress) -> Void = { _ in }, _ body: (IndexEntry) throws -> Bool) throws {
        try retryingWhenIndexRemoved {
            let (design, revision) = try currentDesignDocument(name)
            guard let view = design.view(viewName) else {
                throw DocumentError.missingNamedView(viewName, in: design)
            }
            let reader = IndexEntryReader(store: try store, indexes: try indexes,
                                          partitionPrefix: try partitionPrefix(of: view, partition: partition))
            try checkOnce(design, revision: revision)
            if update { try self.update(design.views, progress: progress) }
            try reader.read(view, scan, conflicts: conflicts, tables: try reader.indexes.tables(for: view.signature), requiringIndex: update, body)
        }
    }

    /// The design document `name` (its id or name) as it is now, and its
    /// revision: parsed once per revision, and nothing committed since it was
    /// last read leaves it so.
    private func currentDesignDocument(_ name: String) throws -> (design: DesignDocument, revision: Revision) {
        let id = name.hasPrefix("_design/") ? name : "_design/" + name
        let committed = try environment.lastCommittedTransaction
        if let current = designDocumentCache.unchanged(id, since: committed) {
            return current
        }
        if let live = try store.liveRevision(id), let cached = designDocumentCache.cached(id, revision: live) {
            designDocumentCache.confirm(id, revision: live, at: committed)
            return (cached, live)
        }
        guard let document = try document(id) else {
            throw DocumentError(.notFound, "missing", id: id)
        }
        return (try designDocumentCache.parsed(document, databaseIsPartitioned: isPartitioned()), document.revision)
    }

    /// Checks a stored design document once per revision before its views
    /// are read: its size (one stored under a higher limit is refused too:
    /// each process would parse and compile it whole), then its functions.
    private func checkOnce(_ design: DesignDocument, revision: Revision) throws {
        guard !designDocumentCache.isChecked(design.id, revision: revision) else { return }
        if let bytes = designDocumentCache.bodyBytes(design.id, revision: revision) { try checkStoredDesignDocumentSize(bytes, id: design.id) }
        try compileOnce(design, revision: revision)
    }

    /// One run of a query of a view written in Swift: the registered views
    /// share one pass over the changes, as a design document's views do.
    private func querySwiftView(_ name: String, options: ViewQueryOptions, progress: (IndexProgress) -> Void, storedReductions: Bool,
                                streaming: Bool, header: (ViewResultHeader) throws -> Void, row: (consuming ViewRow) throws -> Void) throws {
        guard let view = swiftViews.view(name) else {
            var error = DocumentError(.notFound, "missing_named_view: no view is named \"\(name)\": a design document's view is named "
                                      + "DDOC/VIEW (a view written in Swift, by the name it was registered with)")
            error.view = name
            error.suggestions = try viewPathSuggestions(near: name)
            throw error
        }
        try answer(view, updating: swiftViews.all, options: options, progress: progress, storedReductions: storedReductions,
                   streaming: streaming, header: header, row: row) {}
    }

    /// Answers a query of `view`, bringing the indexes of `views` (`view`'s
    /// and those updated with it) up to date first as the options say;
    /// `check` runs once the options are known to be valid, before any update.
    private func answer(_ view: ViewDefinition, updating views: [ViewDefinition], options: ViewQueryOptions, progress: (IndexProgress) -> Void,
                        storedReductions: Bool, streaming: Bool, partitionPrefix: [UInt8]? = nil, header: (ViewResultHeader) throws -> Void,
                        row: (consuming ViewRow) throws -> Void, check: () throws -> Void) throws {
        let validated = try ValidatedViewQuery(view: options, viewHasReduce: view.reduce != nil) { CollationKey.compare($0, $1, mode: view.collation) }
        try check()
        if validated.update == .true {
            try update(views, progress: progress)
        }
        let tables = try indexes.tables(for: view.signature)
        var runner = try ViewQueryRunner(store: store, indexes: indexes, workers: try viewFunctions())
        runner.storedReductions = storedReductions
        runner.partitionPrefix = partitionPrefix
        try runner.run(view, validated, tables: tables, requiringIndex: validated.update == .true, streaming: streaming,
                       header: header, row: row)
        if validated.update == .lazy { try update(views) }
    }

    /// Brings every view's index up to date: the design documents' views and
    /// the views written in Swift registered on this instance, in one pass.
    ///
    /// A stored design document that cannot be used (one written with
    /// ``put(_:)-7va9h`` in another language, without a map, or with a function
    /// that does not compile) does not hold the others back: their views are
    /// indexed first, then the unusable ones are reported.
    ///
    /// - Throws: ``DesignDocumentErrors`` naming each design document left
    ///   out and why, after the others' indexes are up to date.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func updateIndexes(progress: (IndexProgress) -> Void = { _ in }) throws {
        let unusable = try retryingWhenIndexRemoved {
            var usable: [DesignDocument] = []
            var unusable: [DesignDocumentError] = []
            for record in try store.designDocumentRecords() {
                do {
                    try checkStoredDesignDocumentSize(record.body.count, id: record.id)
                    let design = try designDocumentCache.parsed(record, databaseIsPartitioned: isPartitioned())
                    try compileOnce(design, revision: record.revision)
                    usable.append(design)
                } catch var error as DesignDocumentError {
                    if error.designDocument == nil { error.designDocument = record.id }
                    unusable.append(error)
                } catch let error as JSONParseError {
                    unusable.append(DesignDocumentError(designDocument: record.id, reason: "invalid JSON: \(error)"))
                } catch let error as DocumentError where error.code == .documentTooLarge {
                    unusable.append(DesignDocumentError(designDocument: record.id, reason: "\(error.code.rawValue): \(error.reason)"))
                }
            }
            try update(usable.flatMap(\.views) + swiftViews.all, progress: progress)
            return unusable
        }
        if !unusable.isEmpty { throw DesignDocumentErrors(errors: unusable) }
    }

    /// Brings these views' indexes up to date. A new index (an edited view,
    /// or every view after Settee changed how rows are stored) is the moment
    /// to remove those no design document uses, whichever process left them.
    ///
    /// The indexes of `views` themselves are kept even when their design
    /// document was edited during the build (by another process, or another
    /// thread): the caller answers from them next, and the next clean-up
    /// that finds them unused removes them.
    private func update(_ views: [ViewDefinition], progress: (IndexProgress) -> Void = { _ in }) throws {
        // Expired documents leave the indexes before a query reads them.
        try purgeExpiredIfDue()
        // Nothing committed since these indexes were last found up to date: they still are.
        let committed = try environment.lastCommittedTransaction
        let signatures = views.map(\.signature)
        if freshIndexes.areFresh(signatures, at: committed) { return }
        let indexer = try makeIndexer()
        let started = try whileIndexing {
            let stale = try indexer.staleSignatures(views)
            guard !stale.isEmpty else {
                freshIndexes.record(signatures, at: committed)
                return false
            }
            // While another process builds one of these indexes, wait for it: the
            // update then reads what it committed and maps only what is left.
            return try buildLocks.withLocks(stale) { try indexer.update(views, progress: progress) }
        }
        if started {
            try removeUnusedIndexes(keeping: Set(views.map(\.signature)))
        }
    }

    /// Runs `body` holding ``indexing``. While another thread holds it (an
    /// index build), waits, and stops waiting with `CancellationError` once
    /// the work of the calling thread is called off (``Cancellation/current``).
    private func whileIndexing<T>(_ body: () throws -> T) throws -> T {
        if let cancellation = Cancellation.current {
            try cancellation.checkCancelled()
            while !indexing.lock(before: Date(timeIntervalSinceNow: 0.02)) { try cancellation.checkCancelled() }
        } else {
            indexing.lock()
        }
        defer { indexing.unlock() }
        return try body()
    }

    /// CouchDB's `_all_docs`: every live document by id (raw order), with
    /// `{"rev": …}` as value; key, keys, start/end keys, descending, limit, skip,
    /// inclusive_end and include_docs as for views. `total_rows` is the kept
    /// count of live documents (design documents included, as in CouchDB);
    /// `offset` with a start key counts the live documents before it, reading
    /// their records.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func allDocuments(options: ViewQueryOptions = ViewQueryOptions()) throws -> ViewResult {
        let validated = try ValidatedViewQuery(allDocuments: try partitionAllDocuments(options))
        try purgeExpiredIfDue()
        return try ViewResult.collected { header, row in try store.forEachDocumentRow(validated, header: header, row: row) }
    }

    /// CouchDB's `_all_docs` as ``allDocuments(options:)-2p5wn`` answers it, handed
    /// over as it is read instead of held: `header` once, then `body` with
    /// each row in order, in one read transaction (see
    /// ``forEachRow(_:options:progress:header:_:)-97thd`` for what that means for
    /// writers). Memory stays the same however many rows there are.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func forEachDocumentRow(options: ViewQueryOptions = ViewQueryOptions(), header: (ViewResultHeader) throws -> Void = { _ in },
                                   _ body: (ViewRow) throws -> Void) throws {
        let validated = try ValidatedViewQuery(allDocuments: try partitionAllDocuments(options))
        try purgeExpiredIfDue()
        try store.forEachDocumentRow(validated, header: header, row: { try body($0) })
    }

    // MARK: Indexes

    /// Per view (those of the design documents, then the views written in
    /// Swift registered on this instance): its signature, how far its index
    /// is built, rows, bytes, map errors.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func viewInfo() throws -> [ViewInfo] {
        let views = try designDocuments().flatMap(\.views) + swiftViews.all
        while true {
            // Tables are opened before the read transaction: LMDB handles opened later are not valid in it.
            let tables = try views.map { try indexes.tables(for: $0.signature) }
            let info = try environment.read { transaction in
                try zip(views, tables).map { view, tables -> ViewInfo? in
                    let state = try indexes.state(view.signature, in: transaction)
                    // No state, no rows: the tables are not read (their handles may be closed, see
                    // ViewIndexStore.drop). Handles an index that came back no longer has are taken again.
                    if try state != nil && !indexes.areCurrent(tables) { return nil }
                    return ViewInfo(
                        path: view.path, signature: view.signature, indexedSequence: state?.sequence ?? 0,
                        rowCount: state?.rowCount ?? 0, bytes: state == nil ? 0 : try indexes.bytes(of: tables, in: transaction),
                        mapErrors: state?.mapErrors ?? 0)
                }
            }
            if !info.contains(where: { $0 == nil }) { return info.compactMap { $0 } }
        }
    }

    /// Removes the indexes no design document references any more, except
    /// those with the signatures in `kept`.
    ///
    /// The index of a view written in Swift (its state names no design
    /// document) is not one of them: a process that does not register the
    /// view cannot tell it is unused. It goes only when a view of the same
    /// name is registered here with another signature (a new version), or
    /// with ``removeUnregisteredIndexes()``.
    func removeUnusedIndexes(keeping kept: Set<String> = []) throws {
        let registered = swiftViews.all
        let used = Set(try designDocuments().flatMap(\.views).map(\.signature)).union(kept).union(registered.map(\.signature))
        let registeredNames = Set(registered.map { Array($0.name.utf8) })
        try removeIndexes { signature, state in
            guard !used.contains(signature) else { return false }
            return !state.designDocument.isEmpty || registeredNames.contains(Array(state.view.utf8))
        }
    }

    /// Removes the indexes for which `unused` says so.
    func removeIndexes(where unused: (_ signature: String, ViewIndexState) -> Bool) throws {
        // Read first: most calls find nothing to remove, and need no write.
        guard try environment.read({ try indexes.allStates(in: $0) }).contains(where: { unused($0.signature, $0.state) }) else { return }
        try indexing.withLock {
            try environment.write { transaction in
                for (signature, state) in try indexes.allStates(in: transaction) where unused(signature, state) {
                    let name = state.designDocument.isEmpty ? state.view : "\(state.designDocument)/\(state.view)"
                    logger.info("removing an index no view uses", metadata: ["view.signature": "\(signature)", "view.name": "\(name)"])
                    try indexes.drop(signature, in: transaction)
                }
            }
        }
    }

    private func makeIndexer() throws -> ViewIndexer {
        try ViewIndexer(store: store, indexes: indexes, workers: viewFunctions(), logger: logger,
                    batchSize: max(1, options.indexBatchSize), flushBytes: options.indexBufferBytes,
                    spillFlushes: options.indexSpillFlushes)
    }
}

/// Parsed design documents, by id and revision, so queries do not re-parse them,
/// and which of them compiled.
final class DesignDocumentCache: @unchecked Sendable {
    private struct Entry {
        var revision: Revision
        var design: DesignDocument
        var checked = false
        /// The size of the stored document's body.
        var bodyBytes: Int
        /// The last committed transaction when this revision was last read as
        /// the live one (the environment's counter; nil: not since parsed).
        var confirmedAt: Int?
    }

    private let lock = NSLock()
    /// By the id's UTF-8 bytes: as `String` keys, `_design/é` composed and
    /// decomposed would be one entry, and a query of one would be answered
    /// from the other's views.
    private var entries: [[UInt8]: Entry] = [:]

    /// Whether this revision of the design document compiled.
    func isChecked(_ id: String, revision: Revision) -> Bool {
        lock.withLock { entries[Array(id.utf8)].map { $0.revision == revision && $0.checked } ?? false }
    }

    /// The body size of the design document parsed at `revision`, if that is the one cached.
    func bodyBytes(_ id: String, revision: Revision) -> Int? {
        lock.withLock { entries[Array(id.utf8)].flatMap { $0.revision == revision ? $0.bodyBytes : nil } }
    }

    func markChecked(_ id: String, revision: Revision) {
        lock.withLock {
            if entries[Array(id.utf8)]?.revision == revision { entries[Array(id.utf8)]?.checked = true }
        }
    }

    /// The cached design document and its revision, if it was read as the
    /// live one when `committed` was already the last committed transaction:
    /// no write since can have changed it.
    func unchanged(_ id: String, since committed: Int) -> (DesignDocument, Revision)? {
        lock.withLock { entries[Array(id.utf8)].flatMap { $0.confirmedAt == committed ? ($0.design, $0.revision) : nil } }
    }

    /// Records that `revision` was read as the live one with `committed` the
    /// last committed transaction, or later (the counter read before the document).
    func confirm(_ id: String, revision: Revision, at committed: Int) {
        lock.withLock {
            if entries[Array(id.utf8)]?.revision == revision { entries[Array(id.utf8)]?.confirmedAt = committed }
        }
    }

    /// The design document parsed at `revision`, if that is the one cached.
    func cached(_ id: String, revision: Revision) -> DesignDocument? {
        lock.withLock { entries[Array(id.utf8)].flatMap { $0.revision == revision ? $0.design : nil } }
    }

    /// The design document parsed, its views partitioned as the database's
    /// design documents are (``DesignDocument/init(json:file:databaseIsPartitioned:)``).
    func parsed(_ document: Document, databaseIsPartitioned: Bool) throws -> DesignDocument {
        if let design = cached(document.id, revision: document.revision) { return design }
        let design = try DesignDocument(json: try document.value, databaseIsPartitioned: databaseIsPartitioned)
        lock.withLock { entries[Array(document.id.utf8)] = Entry(revision: document.revision, design: design, bodyBytes: document.body.count) }
        return design
    }
}
