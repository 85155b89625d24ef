import Foundation
import SetteeCore
import SetteeStorage

extension DocumentEdit {
    /// Checks a `_design/` document being written as loading one from a file
    /// checks it (``DesignDocument/init(json:file:)``), so that a design
    /// document that could never be used — an unsupported built-in reduce
    /// like `_random_junk`, a bad `_top_N` rank — is refused before it is
    /// stored, as CouchDB's `couch_mrview:validate/2` refuses it, instead of
    /// failing every later query. A design document in another language is
    /// stored unchecked, as CouchDB stores one for a query server it does not
    /// have; a deletion is not checked.
    ///
    /// - Parameter databaseIsPartitioned: Whether the database is
    ///   partitioned: its views are then partitioned unless the design
    ///   document says otherwise, each another index than the same view kept globally.
    /// - Returns: The design document written, or nil when the edit writes
    ///   none that is checked.
    @discardableResult
    package func checkDesignDocument(databaseIsPartitioned: Bool = false) throws(DesignDocumentError) -> DesignDocument? {
        guard let id, id.hasPrefix("_design/"), !deleted,
              case .object(let members)? = try? body.withUnsafeBytes({ try JSONParser.parse($0) }) else { return nil }
        let json = JSONValue.object([(key: "_id", value: .string(id))] + members)
        if case .string(let language)? = json["language"], language != "javascript" {
            try DesignDocumentFieldTypes.check(json)
            return nil
        }
        return try DesignDocument(json: json, databaseIsPartitioned: databaseIsPartitioned)
    }
}
