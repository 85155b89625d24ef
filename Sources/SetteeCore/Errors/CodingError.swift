package import Foundation

/// A document, key or value that does not convert to or from the Swift type
/// asked for, with what was being converted and where in it.
public struct CodingError: SetteeError, Equatable {
    /// ``SetteeErrorCode/decodingFailed`` or ``SetteeErrorCode/encodingFailed``.
    public var errorCode: SetteeErrorCode
    /// What was being converted, e.g. `document "ann"` or `value of row 2 (id "ann")`.
    public var subject: String
    /// The Swift type.
    public var type: String
    /// Where in the JSON the problem is, e.g. `address.city` or `phones[1]`; empty for the top level.
    public var path: String
    /// What is wrong.
    public var reason: String

    /// An error converting `subject` to or from `type`.
    public init(errorCode: SetteeErrorCode, subject: String, type: String, path: String, reason: String) {
        self.errorCode = errorCode
        self.subject = subject
        self.type = type
        self.path = path
        self.reason = reason
    }

    /// `<code>: decoding <subject> as <type> at <path>: <reason>`.
    public var description: String {
        let verb = errorCode == .encodingFailed ? "encoding" : "decoding"
        let place = path.isEmpty ? "" : " at \(path)"
        return "\(errorCode.rawValue): \(verb) \(subject) as \(type)\(place): \(reason)"
    }

    /// Decodes JSON text into `T` as `coding` says, naming `subject` when it fails.
    package static func decode<T: Decodable>(_ type: T.Type, from json: some Collection<UInt8>, coding: DocumentCoding = .standard,
                                             subject: @autoclosure () -> String) throws(CodingError) -> T {
        do {
            return try coding.makeDecoder().decode(T.self, from: Data(json))
        } catch let error as DecodingError {
            let (path, reason) = Self.explain(error)
            throw CodingError(errorCode: .decodingFailed, subject: subject(), type: "\(T.self)", path: path, reason: reason)
        } catch {
            throw CodingError(errorCode: .decodingFailed, subject: subject(), type: "\(T.self)", path: "", reason: "\(error)")
        }
    }

    /// Encodes `value` as JSON text as `coding` says, naming `subject` when it fails.
    package static func encode<T: Encodable>(_ value: T, coding: DocumentCoding = .standard,
                                             subject: @autoclosure () -> String) throws(CodingError) -> Data {
        do {
            return try coding.makeEncoder().encode(value)
        } catch let error as EncodingError {
            guard case .invalidValue(_, let context) = error else {
                throw CodingError(errorCode: .encodingFailed, subject: subject(), type: "\(T.self)", path: "", reason: "\(error)")
            }
            throw CodingError(errorCode: .encodingFailed, subject: subject(), type: "\(T.self)",
                              path: Self.path(context.codingPath), reason: context.debugDescription)
        } catch {
            throw CodingError(errorCode: .encodingFailed, subject: subject(), type: "\(T.self)", path: "", reason: "\(error)")
        }
    }

    private static func explain(_ error: DecodingError) -> (path: String, reason: String) {
        switch error {
        case .typeMismatch(let expected, let context):
            return (path(context.codingPath), "expected \(describe(expected)): \(context.debugDescription)")
        case .valueNotFound(let expected, let context):
            return (path(context.codingPath), "expected \(describe(expected)), found null or nothing")
        case .keyNotFound(let key, let context):
            return (path(context.codingPath), "no member \"\(key.stringValue)\"")
        case .dataCorrupted(let context):
            return (path(context.codingPath), context.debugDescription)
        @unknown default:
            return ("", "\(error)")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        "\(type)"
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }
}
