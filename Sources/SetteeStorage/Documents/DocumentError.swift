public import SetteeCore
/// Why a document operation was refused, in CouchDB's terms: an `error` code
/// and a `reason` sentence, with the document's id when it is known.
public struct DocumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable code to switch on; its raw value is CouchDB's `error` string.
    public enum Code: String, Sendable, Equatable {
        /// The write named a stale or missing `_rev` (HTTP 409 in CouchDB).
        case conflict
        /// No such document, or it was deleted.
        case notFound = "not_found"
        /// The input was not acceptable (bad JSON, bad `_id`, …).
        case badRequest = "bad_request"
        /// A top-level member starting with `_` that CouchDB does not allow.
        case documentValidation = "doc_validation"
        /// A design document's `validate_doc_update` refused the write (`{forbidden: …}`, HTTP 403).
        case forbidden
        /// A design document's `validate_doc_update` asked for another user (`{unauthorized: …}`, HTTP 401).
        case unauthorized
        /// A design document the database cannot take (one whose views would
        /// take it past the indexes it can hold).
        case invalidDesignDocument = "invalid_design_document"
        /// The document is larger than the database accepts (CouchDB's 413
        /// `document_too_large`; see ``Database/Options/maximumDocumentBytes``).
        case documentTooLarge = "document_too_large"
        /// An attachment stub (`"stub": true`) names an attachment the
        /// current revision does not have (CouchDB's 412 `missing_stub`).
        case missingStub = "missing_stub"
    }

    public var code: Code
    /// CouchDB's reason, word for word where CouchDB has one.
    public var reason: String
    /// The document's id, when it is known.
    public var id: String?
    /// For CouchDB's `missing_named_view`: the view asked for, which the
    /// design document ``id`` does not have.
    public var view: String?
    /// For `missing_named_view`: the design document's views nearest to
    /// ``view`` (a likely misspelling first), at most three.
    public var suggestions: [String] = []
    /// What to do about it, where CouchDB's reason does not say (a conflict
    /// of a write that named no revision): for people, not for programs.
    public var hint: String?

    public init(_ code: Code, _ reason: String, id: String? = nil) {
        self.code = code
        self.reason = reason
        self.id = id
    }

    public var description: String {
        let subject = id.map { " (document \"\($0)\")" } ?? ""
        var text = "\(code.rawValue): \(reason)\(subject)"
        if let view {
            text += ": no view \"\(view)\""
            if !suggestions.isEmpty { text += "; did you mean " + suggestions.map { "\"\($0)\"" }.joined(separator: ", ") + "?" }
        }
        return text
    }

    package static func conflict(_ id: String) -> DocumentError {
        DocumentError(.conflict, "Document update conflict.", id: id)
    }
}

extension DocumentError: SetteeError {
    /// What kind of failure this is.
    public var errorCode: SetteeErrorCode {
        switch code {
        case .conflict: .conflict
        case .notFound: .notFound
        case .badRequest: .badRequest
        case .documentValidation: .documentValidation
        case .forbidden: .forbidden
        case .unauthorized: .unauthorized
        case .documentTooLarge: .documentTooLarge
        case .invalidDesignDocument: .invalidDesignDocument
        case .missingStub: .missingStub
        }
    }
}
