import Foundation
public import SetteeCore
import SetteeStorage

/// A row of a view or `_all_docs` result. Keys, values and documents are kept
/// as the JSON text the view produced; decode them with ``key(as:coding:)`` and
/// ``value(as:coding:)``, or read them as ``JSONValue``s.
public struct ViewRow: Sendable, Hashable {
    /// The emitting document's id (nil for reduce rows).
    public var id: String?
    /// The key as JSON text.
    public var keyJSON: String
    /// The value as JSON text.
    public var valueJSON: String
    /// With `include_docs`: the document as JSON text (`null` when it is missing).
    public var documentJSON: String?
    /// For `_all_docs` with `keys`: `not_found` for an id with no document.
    /// For a reduce row: `reduce_overflow_error` when the group's JavaScript
    /// reduction did not shrink fast enough (CouchDB answers the other groups).
    public var error: String?
    /// Why, for a row with an ``error`` that says (`reduce_overflow_error`'s
    /// "Reduce output must shrink more rapidly: …").
    public var reason: String?

    public init(id: String?, keyJSON: String, valueJSON: String, documentJSON: String? = nil, error: String? = nil,
                reason: String? = nil) {
        self.id = id
        self.keyJSON = keyJSON
        self.valueJSON = valueJSON
        self.documentJSON = documentJSON
        self.error = error
        self.reason = reason
    }

    /// The key as a ``JSONValue``.
    /// - Throws: ``JSONParseError`` when the stored key is not JSON (a damaged index), never a silent `null`.
    public var key: JSONValue {
        get throws(JSONParseError) { try JSONParser.parse(keyJSON) }
    }
    /// The value as a ``JSONValue``.
    /// - Throws: ``JSONParseError`` when the stored value is not JSON.
    public var value: JSONValue {
        get throws(JSONParseError) { try JSONParser.parse(valueJSON) }
    }
    /// With `include_docs`: the document as a ``JSONValue`` (`.null` when it is missing).
    /// - Throws: ``JSONParseError`` when the document is not JSON.
    public var document: JSONValue? {
        get throws(JSONParseError) { try documentJSON.map { text throws(JSONParseError) in try JSONParser.parse(text) } }
    }

    /// The key decoded into the caller's type, as `coding` says.
    /// - Throws: ``CodingError`` naming the row and where the key does not fit `T`.
    public func key<T: Decodable>(as type: T.Type, coding: DocumentCoding = .standard) throws -> T {
        try CodingError.decode(T.self, from: Array(keyJSON.utf8), coding: coding, subject: "key of \(subject)")
    }

    /// The value decoded into the caller's type, as `coding` says.
    /// - Throws: ``CodingError`` naming the row and where the value does not fit `T`.
    public func value<T: Decodable>(as type: T.Type, coding: DocumentCoding = .standard) throws -> T {
        try CodingError.decode(T.self, from: Array(valueJSON.utf8), coding: coding, subject: "value of \(subject)")
    }

    /// The included document decoded into the caller's type (nil without
    /// include_docs or when missing); a ``DocumentModel`` gets its id and revision.
    public func document<T: Decodable>(as type: T.Type, coding: DocumentCoding = .standard) throws -> T? {
        guard let documentJSON, documentJSON != "null" else { return nil }
        return try Document.decode(T.self, from: Array(documentJSON.utf8), coding: coding, subject: "document of \(subject)")
    }

    /// How errors name the row.
    private var subject: String {
        id.map { "the row of document \"\($0)\" (key \(keyJSON))" } ?? "the reduce row with key \(keyJSON)"
    }
}

/// A view row with its key and value decoded into the caller's types.
///
/// Its ``id`` is the emitting document's, as in CouchDB's rows, which does
/// not tell rows apart (a reduce row has none; a document may emit several
/// rows): ``TypedViewRow``, from ``ViewResult/rows(key:value:document:coding:)``,
/// is the `Identifiable` form.
public struct DecodedViewRow<Key: Decodable & Sendable, Value: Decodable & Sendable>: Sendable {
    /// The emitting document's id (nil for reduce rows).
    public var id: String?
    /// The row's key, decoded.
    public var key: Key
    /// The row's value, decoded.
    public var value: Value
    /// The row as the view produced it (its included document too, with `include_docs`).
    public var row: ViewRow
}

extension DecodedViewRow: Equatable where Key: Equatable, Value: Equatable {}
extension DecodedViewRow: Hashable where Key: Hashable, Value: Hashable {}

extension ViewResult {
    /// The rows with keys and values decoded into the caller's types, as `coding` says.
    ///
    /// For rows that are `Identifiable` (a SwiftUI list) and hold their
    /// decoded documents, see ``rows(key:value:document:coding:)``.
    ///
    /// ```swift
    /// for row in try result.decodedRows(key: String.self, value: Int.self) {
    ///     print(row.key, row.value)
    /// }
    /// ```
    /// - Throws: ``CodingError`` naming the first row that does not fit.
    public func decodedRows<Key: Decodable & Sendable, Value: Decodable & Sendable>(
        key: Key.Type, value: Value.Type, coding: DocumentCoding = .standard
    ) throws -> [DecodedViewRow<Key, Value>] {
        try rows.map { row in
            DecodedViewRow(id: row.id, key: try row.key(as: Key.self, coding: coding), value: try row.value(as: Value.self, coding: coding), row: row)
        }
    }
}

/// A view query's result, in CouchDB's shape.
public struct ViewResult: Sendable, Equatable {
    /// Rows in the index (map queries; nil for reduce).
    public var totalRows: Int?
    /// Rows before the first one returned (map queries; nil for reduce).
    public var offset: Int?
    /// The database sequence the index reflects, when asked for (`update_seq`).
    public var updateSequence: UInt64?
    public var rows: [ViewRow]
    /// Whether ``json`` says `"offset":null` (see ``ViewResultHeader/writesNullOffset``).
    public var writesNullOffset = false

    /// What the result says besides its rows.
    public var header: ViewResultHeader {
        ViewResultHeader(totalRows: totalRows, offset: offset, updateSequence: updateSequence, writesNullOffset: writesNullOffset)
    }

    /// CouchDB's response body: `{"total_rows":…,"offset":…,"rows":[…]}`.
    public var json: String {
        var out: [UInt8] = []
        out.reserveCapacity(64 + rows.count * 64)
        header.writeJSONOpening(into: &out)
        for (index, row) in rows.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            row.writeJSON(into: &out)
        }
        ViewResultHeader.writeJSONClosing(into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// What a query's result says besides its rows, known before the first row
/// (see ``Database/forEachRow(_:options:progress:header:_:)-97thd``).
public struct ViewResultHeader: Sendable, Equatable {
    /// Rows in the index (map queries and `_all_docs`; nil for reduce).
    public var totalRows: Int?
    /// Rows before the first one returned (map queries; nil for reduce and for `_all_docs` with keys).
    public var offset: Int?
    /// The database sequence the index reflects, when asked for (`update_seq`).
    public var updateSequence: UInt64?
    /// Whether the response body says `"offset":null` when ``offset`` is nil, as CouchDB's
    /// `_all_docs` with `keys` does (`fabric_view_all_docs`); otherwise a nil offset is left out
    /// (reduce queries).
    public var writesNullOffset: Bool

    public init(totalRows: Int?, offset: Int?, updateSequence: UInt64?, writesNullOffset: Bool = false) {
        self.totalRows = totalRows
        self.offset = offset
        self.updateSequence = updateSequence
        self.writesNullOffset = writesNullOffset
    }

    /// Writes the start of CouchDB's response body, up to the rows:
    /// `{"total_rows":…,"offset":…,"rows":[`. Rows follow, separated by
    /// commas (``ViewRow/writeJSON(into:)``), then ``writeJSONClosing(into:)``:
    /// together, byte for byte ``ViewResult/json``.
    public func writeJSONOpening(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let totalRows { out.append(contentsOf: #""total_rows":"#.utf8); out.append(contentsOf: String(totalRows).utf8); out.append(UInt8(ascii: ",")) }
        if let offset { out.append(contentsOf: #""offset":"#.utf8); out.append(contentsOf: String(offset).utf8); out.append(UInt8(ascii: ",")) }
        else if writesNullOffset { out.append(contentsOf: #""offset":null,"#.utf8) }
        if let updateSequence {
            out.append(contentsOf: #""update_seq":"#.utf8)
            out.append(contentsOf: String(updateSequence).utf8)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""rows":["#.utf8)
    }

    /// Writes the end of CouchDB's response body, after the last row: `]}`.
    public static func writeJSONClosing(into out: inout [UInt8]) {
        out.append(contentsOf: "]}".utf8)
    }
}

extension ViewRow {
    /// Writes the row as CouchDB's response has it:
    /// `{"id":…,"key":…,"value":…,"doc":…}` (or `{"key":…,"error":…,"reason":…}`).
    public func writeJSON(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let id {
            out.append(contentsOf: #""id":"#.utf8)
            JSONWriter.writeString(id, into: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""key":"#.utf8)
        out.append(contentsOf: keyJSON.utf8)
        if let error {
            out.append(contentsOf: #","error":"#.utf8)
            JSONWriter.writeString(error, into: &out)
            if let reason {
                out.append(contentsOf: #","reason":"#.utf8)
                JSONWriter.writeString(reason, into: &out)
            }
            out.append(UInt8(ascii: "}"))
            return
        }
        out.append(contentsOf: #","value":"#.utf8)
        out.append(contentsOf: valueJSON.utf8)
        if let documentJSON {
            out.append(contentsOf: #","doc":"#.utf8)
            out.append(contentsOf: documentJSON.utf8)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension ViewResult {
    /// The whole result of a read that hands over its header, then its rows,
    /// as it goes (`read` is given where to put each).
    package static func collected(
        _ read: (_ header: (ViewResultHeader) throws -> Void, _ row: (consuming ViewRow) throws -> Void) throws -> Void
    ) throws -> ViewResult {
        var result = ViewResult(totalRows: nil, offset: nil, updateSequence: nil, rows: [])
        try read({ header in
            result.totalRows = header.totalRows
            result.offset = header.offset
            result.updateSequence = header.updateSequence
            result.writesNullOffset = header.writesNullOffset
        }, { row in
            result.rows.append(row)
        })
        return result
    }
}
