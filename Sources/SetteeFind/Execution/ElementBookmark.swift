import SetteeCore

/// Where a page of ``UnnestRequest`` results ended: the last element's
/// document and its position there, written as a `find` bookmark (the
/// position as its key), so that the next page resumes with the element
/// after it, in the same document or the next.
struct ElementBookmark: Equatable {
    var documentID: String
    var position: Int

    init(documentID: String, position: Int) {
        self.documentID = documentID
        self.position = position
    }

    /// The opaque string a result hands out.
    var encoded: String {
        Bookmark(key: .number(Double(position)), id: documentID).encoded
    }

    /// Decodes a bookmark handed out by ``encoded``.
    /// - Throws: CouchDB's `invalid_bookmark` for anything else (a `find` bookmark among them).
    init(decoding text: String) throws(MangoError) {
        let bookmark = try Bookmark(decoding: text)
        guard case .number(let number, _) = bookmark.key, number >= 0, number < 1e15, number.rounded(.towardZero) == number else {
            throw MangoError(error: "invalid_bookmark", reason: "Invalid bookmark value: \(JSONValue.string(text).jsonText)")
        }
        self.init(documentID: bookmark.id, position: Int(number))
    }
}
