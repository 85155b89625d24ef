import Foundation
import SetteeCore
import SetteeStorage
import SetteeJavaScript
import SetteeViews

/// Runs the `validate_doc_update` functions of the stored design documents on
/// every document write, as CouchDB does: each is called with
/// `(newDoc, oldDoc, userCtx, secObj)`, and one that throws
/// `{forbidden: reason}` or `{unauthorized: reason}` refuses the write.
///
/// Design documents and `_local` documents are not validated; with a
/// ``Database/validationContext`` bound, design documents are refused to
/// writers who are not the database's administrators, as CouchDB does. The functions run on
/// the JavaScript workers: for a single write, on a read snapshot before its
/// write transaction begins (a slow function holds no writer); for the
/// writes of a batch, while its transaction waits.
final class UpdateValidation: DocumentWriteValidation, @unchecked Sendable {
    private let workers: @Sendable () throws -> JavaScriptWorkerPool
    /// `userCtx` as JSON text, for writes without a ``Database/validationContext``.
    private let userContextJSON: String
    /// The database's name, as `userCtx.db` gives it.
    private let database: String
    /// Parsed design documents, by revision (the database's).
    private let designDocuments: DesignDocumentCache
    private let lock = NSLock()
    /// The functions of the committed design documents, as of a committed transaction.
    private var committed: (transaction: Int, functions: [Function])?
    /// The functions the write transaction running now checks with: read as
    /// it began (LMDB runs one write transaction at a time).
    private var current: [Function] = []
    /// Whether the database is partitioned, as the write transaction running now read it.
    private var partitioned = false
    /// The Swift rule every document write passes first (``Database/Options/writeRule``).
    private let rule: (any DocumentWriteRule)?

    struct Function {
        var designDocument: String
        var source: String
    }

    init(database: String, userContext: UserContext, designDocuments: DesignDocumentCache, rule: (any DocumentWriteRule)?,
         workers: @escaping @Sendable () throws -> JavaScriptWorkerPool) {
        self.workers = workers
        self.rule = rule
        self.designDocuments = designDocuments
        self.database = database
        userContextJSON = userContext.json(database: database).jsonText
    }

    /// Checks `edit` of document `id` against every validation function;
    /// `current` is the stored revision, if any.
    /// - Throws: ``DocumentError`` (`forbidden`, `unauthorized`) when a function
    ///   refuses the write, ``JavaScriptError`` when one fails.
    func validate(_ edit: DocumentEdit, id: String, current: DocumentRecord?) throws {
        let (functions, partitioned) = lock.withLock { (self.current, self.partitioned) }
        try validate(edit, id: id, current: current, functions: functions, partitioned: partitioned)
    }

    /// Checks `edit` on a read snapshot, with the functions of the design
    /// documents that snapshot holds (see ``DocumentWriteValidation/validateAhead(_:id:current:store:in:)``).
    func validateAhead(_ edit: DocumentEdit, id: String, current: DocumentRecord?, store: DocumentStore,
                       in transaction: LMDBTransaction) throws -> ValidatedWrite? {
        let partitioned = try DatabaseProperties.isPartitioned(store, in: transaction)
        let functions = try self.functions(store: store, snapshot: transaction.id, in: transaction)
        if functions.isEmpty && rule == nil { return nil }
        try validate(edit, id: id, current: current, functions: functions, partitioned: partitioned)
        return ValidatedWrite(id: id, sequence: current?.sequence, checkedWith: Self.terms(functions, partitioned: partitioned))
    }

    /// Whether the write transaction running now checks with the same functions.
    func stillChecks(_ validated: ValidatedWrite) -> Bool {
        let (functions, partitioned) = lock.withLock { (self.current, self.partitioned) }
        return validated.checkedWith == Self.terms(functions, partitioned: partitioned)
    }

    /// What a check was made with, comparable: each function's design document and source.
    private static func terms(_ functions: [Function], partitioned: Bool) -> [String] {
        [partitioned ? "partitioned" : "global"] + functions.flatMap { [$0.designDocument, $0.source] }
    }

    private func validate(_ edit: DocumentEdit, id: String, current: DocumentRecord?, functions: [Function], partitioned: Bool) throws {
        if id.hasPrefix("_design/"), let context = Database.validationContext, !context.isDatabaseAdministrator {
            // couch_db:validate_doc_update/3: design documents are the database administrators'.
            throw DocumentError(context.userContext.name == nil ? .unauthorized : .forbidden,
                                "You are not a db or server admin.", id: id)
        }
        if partitioned {
            try Partition.validateDocumentID(id)
        } else if id.hasPrefix("_design/") {
            try Partition.validateDesignDocument(edit.body)
        }
        if id.hasPrefix("_design/") || id.hasPrefix("_local/") { return }
        if functions.isEmpty && rule == nil { return }
        var arguments: [UInt8] = [UInt8(ascii: "[")]
        appendNewDocument(edit, id: id, current: current, into: &arguments)
        let newEnd = arguments.count
        arguments.append(UInt8(ascii: ","))
        if let current {
            var id = id
            id.withUTF8 { current.appendFullJSON(id: UnsafeRawBufferPointer($0), into: &arguments) }
        } else {
            arguments.append(contentsOf: "null".utf8)
        }
        if let rule {
            let document = try JSONParser.parse(arguments[1..<newEnd])
            var old: JSONValue?
            if current != nil { old = try JSONParser.parse(arguments[(newEnd + 1)...]) }
            try rule.check(document, old: old, writer: Database.validationContext)
            if functions.isEmpty { return }
        }
        if let context = Database.validationContext {
            arguments.append(contentsOf: ",\(context.userContext.json(database: database).jsonText),\(context.securityObject.jsonText)]".utf8)
        } else {
            arguments.append(contentsOf: ",\(userContextJSON),{}]".utf8)
        }
        let argumentsJSON = String(decoding: arguments, as: UTF8.self)
        let outcomes = try workers().nextWorker().run { context in
            try functions.map { function in
                let compiled = try context.compile(function.source, name: "\(function.designDocument) validate_doc_update")
                return try context.call([compiled], argumentsJSON: argumentsJSON).results[0]
            }
        }
        for (function, outcome) in zip(functions, outcomes) {
            guard case .failure(let error) = outcome else { continue }
            throw Self.refusal(error, designDocument: function.designDocument, id: id)
        }
    }

    /// `newDoc`: the edit as written, with `_id`, the `_rev` it names and
    /// `_deleted` for a deletion, and its `_attachments` as stubs.
    private func appendNewDocument(_ edit: DocumentEdit, id: String, current: DocumentRecord?, into out: inout [UInt8]) {
        let body = edit.bodyWithAttachmentStubs(current: current)
        out.append(contentsOf: #"{"_id":"#.utf8)
        JSONWriter.writeString(id, into: &out)
        if let revision = edit.revision {
            out.append(contentsOf: #","_rev":"#.utf8)
            JSONWriter.writeString(revision.description, into: &out)
        }
        if edit.deleted { out.append(contentsOf: #","_deleted":true"#.utf8) }
        if body.count > 2 {
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: body[1...])
        } else {
            out.append(UInt8(ascii: "}"))
        }
    }

    /// What a thrown value means: CouchDB's `forbidden` and `unauthorized`
    /// objects refuse the write with their reason; anything else is the
    /// function's error.
    static func refusal(_ error: JavaScriptError, designDocument: String, id: String) -> any Error {
        if error.kind == .runtime, case .object(let members)? = try? JSONParser.parse(error.message), members.count == 1 {
            let reason = members[0].value.stringValue ?? members[0].value.jsonText
            switch members[0].key {
            case "forbidden": return DocumentError(.forbidden, reason, id: id)
            case "unauthorized": return DocumentError(.unauthorized, reason, id: id)
            default: break
            }
        }
        var described = error
        described.message = "\(designDocument) validate_doc_update, writing \"\(id)\": \(error.message)"
        return described
    }

    /// Reads the functions a write transaction checks with, as it begins:
    /// those of the committed design documents (as CouchDB reads them once
    /// per request), so a batch that writes a design document is checked with
    /// the functions it started with, and one rolled back leaves none of its
    /// own behind. Read again only once something was committed since.
    func beginWrite(store: DocumentStore, in transaction: LMDBTransaction) throws {
        let partitioned = try DatabaseProperties.isPartitioned(store, in: transaction)
        let functions = try functions(store: store, snapshot: store.environment.lastCommittedTransaction, in: transaction)
        lock.withLock {
            self.partitioned = partitioned
            current = functions
        }
    }

    /// The functions of the design documents `transaction` sees, which holds
    /// what the committed transaction `snapshot` left: read once per commit.
    private func functions(store: DocumentStore, snapshot: Int, in transaction: LMDBTransaction) throws -> [Function] {
        if let known = lock.withLock({ committed }), known.transaction == snapshot { return known.functions }
        var functions: [Function] = []
        for document in try store.designDocumentRecords(in: transaction) {
            let source = designDocuments.cached(document.id, revision: document.revision).map(\.validateDocumentUpdate)
                ?? (try? document.value["validate_doc_update"])?.stringValue
            if let source { functions.append(Function(designDocument: document.id, source: source)) }
        }
        lock.withLock { committed = (snapshot, functions) }
        return functions
    }
}
