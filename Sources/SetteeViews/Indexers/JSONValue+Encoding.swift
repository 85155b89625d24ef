import Foundation
import SetteeCore

extension JSONValue {
    /// The JSON an `Encodable` value encodes to (with `JSONEncoder`'s
    /// default strategies): what ``Emitter`` takes for a key or value
    /// that is a Swift type of your own.
    public init(encoding value: some Encodable) throws {
        let data = try JSONEncoder().encode(value)
        self = try data.withUnsafeBytes { bytes throws(JSONParseError) in try JSONParser.parse(bytes) }
    }
}
