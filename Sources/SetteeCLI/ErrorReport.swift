import Settee

/// What every command prints on standard error when it fails: one JSON
/// object on one line, `{"error": …, "reason": …}` as CouchDB answers, with
/// what else the error knows (the document's id, each design document
/// problem with its file, view and line).
enum ErrorReport {
    static func json(for error: any Error) -> JSONValue {
        switch error {
        case let error as DocumentError:
            var report: [(key: String, value: JSONValue)] = [("error", .string(error.code.rawValue)), ("reason", .string(error.reason))]
            if let id = error.id { report.append(("id", .string(id))) }
            if let view = error.view {
                report.append(("view", .string(view)))
                report.append(("suggestions", .array(error.suggestions.map(JSONValue.string))))
            }
            if let hint = error.hint { report.append(("hint", .string(hint))) }
            return .object(report)
        case let error as QueryError:
            return .object([("error", .string(error.error)), ("reason", .string(error.reason))])
        case let error as MangoError:
            return .object([("error", .string(error.error)), ("reason", .string(error.reason))])
        case let error as DesignDocumentErrors:
            let count = error.errors.count
            return .object([
                ("error", .string(SetteeErrorCode.invalidDesignDocument.rawValue)),
                ("reason", .string(count == 1 ? error.errors[0].description : "\(count) problems in design documents; nothing was stored")),
                ("problems", .array(error.errors.map(problem))),
            ])
        case let error as DesignDocumentError:
            return .object([("error", .string(SetteeErrorCode.invalidDesignDocument.rawValue)), ("reason", .string(error.description)),
                            ("problems", [problem(error)])])
        case let error as any SetteeError:
            return .object([("error", .string(error.errorCode.rawValue)), ("reason", .string(error.description))])
        default:
            return .object([("error", "error"), ("reason", .string("\(error)"))])
        }
    }

    /// One design document problem: where it is, what is wrong, and the whole as one sentence.
    static func problem(_ error: DesignDocumentError) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = []
        if let file = error.file { fields.append(("file", .string(file))) }
        if let line = error.fileLine { fields.append(("file_line", .number(Double(line)))) }
        if let id = error.designDocument { fields.append(("id", .string(id))) }
        if let view = error.view { fields.append(("view", .string(view))) }
        if let function = error.function { fields.append(("function", .string(function))) }
        if let line = error.line { fields.append(("line", .number(Double(line)))) }
        if let column = error.column { fields.append(("column", .number(Double(column)))) }
        fields.append(("reason", .string(error.reason)))
        fields.append(("description", .string(error.description)))
        return .object(fields)
    }

    /// Prints the design documents an index build left out (it indexed the others).
    static func printSkipped(_ problems: [DesignDocumentError]) {
        printError(JSONValue.object([
            ("error", .string(SetteeErrorCode.invalidDesignDocument.rawValue)),
            ("reason", .string("skipped \(problems.count) design document(s) that cannot be used; the others were indexed: "
                               + problems.map(\.description).joined(separator: "; "))),
            ("problems", .array(problems.map(problem))),
        ]).jsonText)
    }

    /// Prints the report of `error` on standard error.
    static func print(_ error: any Error) {
        printError(json(for: error).jsonText)
    }
}
