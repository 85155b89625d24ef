import Foundation

/// An error Settee throws, with a stable ``SetteeErrorCode`` to switch on.
///
/// Every error type of the library conforms: ``DocumentError``,
/// ``QueryError``, ``DesignDocumentError``, ``DesignDocumentErrors``,
/// ``JavaScriptError``, ``StorageError``, ``JSONParseError`` and
/// ``CodingError``. Each keeps its own details (the document id, the file and
/// line, CouchDB's reason); ``errorCode`` says what kind of failure it is in
/// one vocabulary:
///
/// ```swift
/// do {
///     try db.put(contact, id: "ann")
/// } catch let error as any SetteeError {
///     switch error.errorCode {
///     case .conflict: …        // someone else updated "ann" first
///     case .badRequest: …
///     default: throw error
///     }
/// }
/// ```
///
/// A code also matches an error directly in a `catch` clause:
///
/// ```swift
/// do { try db.put(contact, id: "ann") } catch SetteeErrorCode.conflict { … }
/// ```
public protocol SetteeError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    var errorCode: SetteeErrorCode { get }
}

/// The kinds of failure Settee reports. The raw values are stable (they are
/// CouchDB's `error` names where CouchDB has one) and safe to store or log.
///
/// A struct of constants rather than an enum, so that a code can be a `catch`
/// pattern and new codes can come without breaking exhaustive `switch`es.
public struct SetteeErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The stable name, e.g. `conflict` or `query_parse_error`.
    public let rawValue: String

    /// A code from its stable name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The stable name.
    public var description: String { rawValue }

    // Documents
    /// A write named a stale or missing revision (CouchDB's 409).
    public static let conflict = SetteeErrorCode(rawValue: "conflict")
    /// No such document, design document, view or database, or the document was deleted.
    public static let notFound = SetteeErrorCode(rawValue: "not_found")
    /// The input was not acceptable: a bad `_id`, a document that is not a
    /// JSON object, a malformed request.
    public static let badRequest = SetteeErrorCode(rawValue: "bad_request")
    /// A top-level member starting with `_` that CouchDB does not allow.
    public static let documentValidation = SetteeErrorCode(rawValue: "doc_validation")
    /// A document larger than the database accepts (CouchDB's 413
    /// `document_too_large`): see ``Database/Options/maximumDocumentBytes``
    /// and ``Database/Options/maximumDesignDocumentBytes``.
    public static let documentTooLarge = SetteeErrorCode(rawValue: "document_too_large")
    /// Text that is not JSON.
    public static let invalidJSON = SetteeErrorCode(rawValue: "invalid_json")

    // Views
    /// Query options CouchDB would reject (its `query_parse_error`).
    public static let queryParseError = SetteeErrorCode(rawValue: "query_parse_error")
    /// A design document that cannot be used: bad shape, unknown built-in
    /// reducer, a function that does not compile.
    public static let invalidDesignDocument = SetteeErrorCode(rawValue: "invalid_design_document")
    /// A custom reduce whose output does not shrink (CouchDB's `reduce_overflow_error`): in a
    /// view's answer, the row of that group (``ViewRow/reason``); in `settee couchjs`, the reply.
    public static let reduceOverflow = SetteeErrorCode(rawValue: "reduce_overflow_error")
    /// A built-in reducer refused its input (CouchDB's `builtin_reduce_error`).
    public static let reduceFailed = SetteeErrorCode(rawValue: "reduce_error")

    // JavaScript
    /// A function's source did not compile, or did not evaluate to a function.
    public static let compilationError = SetteeErrorCode(rawValue: "compilation_error")
    /// A function threw.
    public static let runtimeError = SetteeErrorCode(rawValue: "runtime_error")
    /// A function ran past its time limit and was stopped.
    public static let timeout = SetteeErrorCode(rawValue: "timeout")
    /// A function exhausted the engine's memory limit.
    public static let outOfMemory = SetteeErrorCode(rawValue: "out_of_memory")
    /// A call was interrupted from another thread.
    public static let interrupted = SetteeErrorCode(rawValue: "interrupted")
    /// The JavaScript engine itself failed.
    public static let javaScriptEngineFailure = SetteeErrorCode(rawValue: "internal_error")

    // Storage
    /// The database reached its size limit or the disk is full.
    public static let storageFull = SetteeErrorCode(rawValue: "storage_full")
    /// The storage engine failed otherwise.
    public static let storageFailure = SetteeErrorCode(rawValue: "storage_error")
    /// The database's files are damaged: a truncated data file, a record
    /// that does not decode.
    public static let databaseDamaged = SetteeErrorCode(rawValue: "database_damaged")
    /// The directory holds an LMDB file of another program (or of a newer
    /// Settee), which Settee neither reads nor changes.
    public static let notSetteeDatabase = SetteeErrorCode(rawValue: "not_a_settee_database")
    /// Another process held the database's write lock for longer than the
    /// busy timeout (``Database/Options/busyTimeout``); nothing was written.
    public static let busy = SetteeErrorCode(rawValue: "busy")
    /// A ``Database/write(_:)-3j48g`` batch filled the memory map the database had
    /// (see ``Database/Options/initialMapSize``): the map has grown, and the
    /// batch was rolled back without its closure running again. Nothing was
    /// written; run the batch again.
    public static let databaseGrew = SetteeErrorCode(rawValue: "database_grew")
    /// A call on a database after ``Database/close()``.
    public static let closed = SetteeErrorCode(rawValue: "database_closed")
    /// A write to a database opened read-only (``Database/Options/readOnly``,
    /// or files this process may not write).
    public static let readOnly = SetteeErrorCode(rawValue: "read_only")

    // Typed values
    /// A stored document, key or value does not decode into the type asked for.
    public static let decodingFailed = SetteeErrorCode(rawValue: "decoding_failed")
    /// A value could not be encoded as a JSON object document.
    public static let encodingFailed = SetteeErrorCode(rawValue: "encoding_failed")
    /// A design document's `validate_doc_update` refused the write.
    public static let forbidden = SetteeErrorCode(rawValue: "forbidden")
    /// A design document's `validate_doc_update` refused the write for this user.
    public static let unauthorized = SetteeErrorCode(rawValue: "unauthorized")
}

extension JSONParseError: SetteeError {
    /// What kind of failure this is.
    public var errorCode: SetteeErrorCode { .invalidJSON }
}
