public import Foundation
public import SetteeCore

/// One document a `find` query returned: its JSON text as stored (or, with
/// ``FindRequest/fields``, the fields asked for), parsed only when asked.
///
/// A whole document is kept as the bytes the database holds, so writing a
/// response (``FindResult/jsonText``, ``FindResult/writeJSON(into:)``)
/// copies them and nothing is parsed; ``json`` and ``decoded(as:decoder:)``
/// parse it when called.
///
/// ```swift
/// for document in try db.find(request).found {
///     let book = try document.decoded(as: Book.self)
/// }
/// ```
public struct FoundDocument: Sendable, Equatable, CustomStringConvertible {
    private enum Content: Sendable {
        /// Compact JSON text, as the database stores a document.
        case text(String)
        /// A value built for the result (the fields asked for).
        case value(JSONValue)
    }

    private let content: Content

    /// A document as JSON text. The text is taken as it is, unchecked: it is
    /// written into responses byte for byte.
    package init(jsonText: String) {
        content = .text(jsonText)
    }

    /// A document as a value.
    public init(_ value: JSONValue) {
        content = .value(value)
    }

    /// The document as compact JSON text: the stored bytes of a whole document.
    public var jsonText: String {
        switch content {
        case .text(let text): text
        case .value(let value): value.jsonText
        }
    }

    /// The document parsed (each call parses the text again).
    public var json: JSONValue {
        switch content {
        case .text(let text):
            // Text the database wrote: it parses.
            (try? JSONParser.parse(text)) ?? .null
        case .value(let value): value
        }
    }

    /// The document decoded as `T`, from its text (no ``JSONValue`` is built).
    public func decoded<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        switch content {
        case .text(let text): try decoder.decode(T.self, from: Data(text.utf8))
        case .value(let value): try decoder.decode(T.self, from: Data(value.jsonText.utf8))
        }
    }

    /// Appends the document's JSON text to `out`.
    public func writeJSON(into out: inout [UInt8]) {
        switch content {
        case .text(let text): out.append(contentsOf: text.utf8)
        case .value(let value): JSONWriter.write(value, into: &out)
        }
    }

    /// Appends the document's JSON text to `text`.
    func appendJSON(to text: inout String) {
        switch content {
        case .text(let json): text += json
        case .value(let value): text += value.jsonText
        }
    }

    /// Calls `body` with the stored text's bytes; nil for a value.
    func withTextUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        guard case .text(var text) = content else { return nil }
        return text.withUTF8(body)
    }

    /// The text's length in bytes, or a guess for a value (to reserve room).
    var utf8Count: Int {
        if case .text(let text) = content { return text.utf8.count }
        return 64
    }

    /// The JSON text.
    public var description: String { jsonText }

    /// Equal when their JSON texts are the same, byte for byte.
    public static func == (a: FoundDocument, b: FoundDocument) -> Bool {
        a.jsonText.utf8.elementsEqual(b.jsonText.utf8)
    }
}
