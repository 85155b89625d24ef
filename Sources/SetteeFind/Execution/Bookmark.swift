import Foundation
import SetteeCore

/// Where a page of `find` results ended: the last result's index key and
/// document id, as an opaque base64url string.
struct Bookmark: Equatable {
    var key: JSONValue
    var id: String

    /// The string a result hands out.
    var encoded: String {
        Data(JSONValue.array([key, .string(id)]).jsonText.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes a bookmark handed out by ``encoded``.
    /// - Throws: CouchDB's `invalid_bookmark` for anything else.
    init(decoding text: String) throws(MangoError) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
              case .array(let pair)? = try? JSONParser.parse(data), pair.count == 2, case .string(let id) = pair[1]
        else { throw MangoError(error: "invalid_bookmark", reason: "Invalid bookmark value: \(JSONValue.string(text).jsonText)") }
        key = pair[0]
        self.id = id
    }

    init(key: JSONValue, id: String) {
        self.key = key
        self.id = id
    }
}
