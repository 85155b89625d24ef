public import SetteeCore
import SetteeStorage
/// A design document that cannot be used, with where the problem is.
public struct DesignDocumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file it was loaded from, or nil for a design document in the database.
    public var file: String?
    /// The line of that file where the function is written (a function is one
    /// JSON string, so its own ``line`` counts within that string), when known.
    public var fileLine: Int?
    /// The design document's id (`_design/NAME`), when known.
    public var designDocument: String?
    /// The view, when the problem is in one.
    public var view: String?
    /// The function (`map` or `reduce`), when the problem is in one.
    public var function: String?
    /// The line in that function's source, when known.
    public var line: Int?
    /// The column in that function's source, when known.
    public var column: Int?
    /// What is wrong.
    public var reason: String

    public init(file: String? = nil, fileLine: Int? = nil, designDocument: String? = nil, view: String? = nil, function: String? = nil,
                line: Int? = nil, column: Int? = nil, reason: String) {
        self.file = file
        self.fileLine = fileLine
        self.designDocument = designDocument
        self.view = view
        self.function = function
        self.line = line
        self.column = column
        self.reason = reason
    }

    public var description: String {
        var place: [String] = []
        if let file { place.append(file + (fileLine.map { ":\($0)" } ?? "")) }
        if let designDocument { place.append(designDocument) }
        if let view { place.append("view \"\(view)\"") }
        if let function { place.append(function) }
        if let line { place.append("line \(line)" + (column.map { ", column \($0)" } ?? "")) }
        return (place.isEmpty ? "" : place.joined(separator: ", ") + ": ") + reason
    }
}

/// Several design documents that cannot be used.
public struct DesignDocumentErrors: Error, Sendable, CustomStringConvertible {
    public var errors: [DesignDocumentError]

    package init(errors: [DesignDocumentError]) {
        self.errors = errors
    }

    public var description: String {
        errors.map(\.description).joined(separator: "\n")
    }
}

extension DesignDocumentError: SetteeError {
    /// What kind of failure this is.
    public var errorCode: SetteeErrorCode { .invalidDesignDocument }
}

extension DesignDocumentErrors: SetteeError {
    /// What kind of failure this is.
    public var errorCode: SetteeErrorCode { .invalidDesignDocument }
}
