import Foundation

/// Runs the `validate_doc_update` functions of the stored design documents on
/// every document write, as CouchDB does: each is called with
/// `(newDoc, oldDoc, userCtx, secObj)`, and one that throws
/// `{forbidden: reason}` or `{unauthorized: reason}` refuses the write.
///
/// Design documents and `_local` documents are not validated (CouchDB checks
/// only that an administrator writes design documents). The functions run on
/// the JavaScript workers while the write transaction waits.
final class UpdateValidation: @unchecked Sendable {
    private let workers: @Sendable () throws -> JavaScriptWorkerPool
    private let userContext: JSONValue
    private let lock = NSLock()
    /// The validation functions as a transaction saw them.
    private var functions: (transaction: Int, list: [Function])?

    struct Function {
        var designDocument: String
        var source: String
    }

    init(database: String, userContext: UserContext, workers: @escaping @Sendable () throws -> JavaScriptWorkerPool) {
        self.workers = workers
        self.userContext = userContext.json(database: database)
    }

    /// Checks `edit` of document `id` against every validation function;
    /// `current` is the stored revision, if any.
    /// - Throws: ``DocumentError`` (`forbidden`, `unauthorized`) when a function
    ///   refuses the write, ``JavaScriptError`` when one fails.
    func validate(_ edit: DocumentEdit, id: String, current: DocumentRecord?, store: DocumentStore,
                  in transaction: LMDBTransaction) throws {
        if id.hasPrefix("_design/") || id.hasPrefix("_local/") { return }
        let functions = try self.functions(store: store, in: transaction)
        if functions.isEmpty { return }
        var arguments: [UInt8] = [UInt8(ascii: "[")]
        appendNewDocument(edit, id: id, into: &arguments)
        arguments.append(UInt8(ascii: ","))
        if let current {
            id.utf8CString.withUnsafeBytes { idBytes in
                current.appendFullJSON(id: UnsafeRawBufferPointer(rebasing: idBytes.dropLast()), into: &arguments)
            }
        } else {
            arguments.append(contentsOf: "null".utf8)
        }
        arguments.append(contentsOf: ",\(userContext.jsonText),{}]".utf8)
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
    /// `_deleted` for a deletion.
    private func appendNewDocument(_ edit: DocumentEdit, id: String, into out: inout [UInt8]) {
        out.append(contentsOf: #"{"_id":"#.utf8)
        JSONWriter.writeString(id, into: &out)
        if let revision = edit.revision {
            out.append(contentsOf: #","_rev":"#.utf8)
            JSONWriter.writeString(revision.description, into: &out)
        }
        if edit.deleted { out.append(contentsOf: #","_deleted":true"#.utf8) }
        if edit.body.count > 2 {
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: edit.body[1...])
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
        described.message = "\(designDocument) validate_doc_update: \(error.message)"
        return described
    }

    /// The validation functions of the design documents `transaction` sees,
    /// read once per write transaction (as CouchDB reads them once per
    /// request): a batch that writes a design document is checked with the
    /// functions it started with.
    private func functions(store: DocumentStore, in transaction: LMDBTransaction) throws -> [Function] {
        let id = transaction.id
        if let known = lock.withLock({ functions }), known.transaction == id { return known.list }
        var list: [Function] = []
        for document in try store.designDocumentRecords(in: transaction) {
            if case .string(let source)? = try? document.value["validate_doc_update"] {
                list.append(Function(designDocument: document.id, source: source))
            }
        }
        lock.withLock { functions = (id, list) }
        return list
    }
}
