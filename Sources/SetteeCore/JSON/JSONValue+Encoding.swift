import Foundation

extension JSONValue {
    /// The JSON a value encodes as, encoded as Settee encodes documents
    /// (`Database.put(_:id:revision:coding:)`): dates as ISO 8601 text, object
    /// members sorted by name. So a key built from a value matches the key a
    /// view emits from a document that holds the same value:
    ///
    /// ```swift
    /// let key = try JSONValue(encoding: note.created)   // "2026-11-25T20:30:00Z"
    /// let pair = try JSONValue(encoding: ["swift", "couchdb"])
    /// ```
    ///
    /// - Throws: ``CodingError`` (``SetteeErrorCode/encodingFailed``) when the
    ///   value does not encode (a non-finite number, a failing `encode(to:)`).
    public init(encoding value: some Encodable) throws(CodingError) {
        let subject = "a JSON value"
        let data = try CodingError.encode(value, subject: subject)
        do {
            self = try JSONParser.parse(data)
        } catch {
            throw CodingError(errorCode: .encodingFailed, subject: subject, type: "\(type(of: value))", path: "", reason: "\(error)")
        }
    }

    /// The highest key in CouchDB's collation among those views usually emit
    /// (it sorts after every string, number and array): `{}`. As the last
    /// element of an end key it takes in every key that starts with the
    /// elements before it, CouchDB's `endkey=["tag",{}]`:
    ///
    /// ```swift
    /// ViewQueryOptions(startKey: ["swift"], endKey: ["swift", .highest])
    /// ```
    public static let highest: JSONValue = .object([])

    /// The lowest key in CouchDB's collation: `null`.
    public static let lowest: JSONValue = .null
}
