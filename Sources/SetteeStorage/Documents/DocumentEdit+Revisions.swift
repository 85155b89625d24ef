import SetteeCore

extension DocumentEdit {
    /// Reads `_revisions` (`{"start": N, "ids": ["hash", …]}`, newest first)
    /// as CouchDB's `couch_doc:transfer_fields` does.
    static func revisionHistory(_ value: UnsafeRawBufferPointer, id: String?) throws(DocumentError) -> [Revision] {
        guard let parsed = try? JSONParser.parse(value), case .object = parsed else {
            throw DocumentError(.badRequest, "_revisions must be an object with start and ids", id: id)
        }
        guard let startValue = parsed["start"]?.doubleValue, startValue >= 1, startValue == startValue.rounded(),
              startValue <= Double(UInt32.max) else {
            throw DocumentError(.badRequest, "RevId isn't an integer: _revisions.start must be a positive integer", id: id)
        }
        guard case .array(let ids)? = parsed["ids"] else {
            throw DocumentError(.badRequest, "RevIds isn't an array: _revisions.ids must be an array of revision ids", id: id)
        }
        let start = UInt32(startValue)
        guard ids.count <= Int(start) else {
            throw DocumentError(.badRequest, "RevId isn't a valid path: _revisions has \(ids.count) ids back from generation \(start)", id: id)
        }
        var history: [Revision] = []
        history.reserveCapacity(ids.count)
        for (offset, value) in ids.enumerated() {
            guard case .string(let hash) = value, let revision = Revision("\(start - UInt32(offset))-\(hash)") else {
                let problem = value.stringValue?.utf8.count == 32 ? "RevId isn't a valid hexadecimal" : "Invalid rev format"
                throw DocumentError(.badRequest, "\(problem): _revisions.ids[\(offset)] (\(String(value.jsonText.prefix(100)))) is not a revision id"
                                    + " (32 hex digits, or at most \(Revision.maximumTextLength) printable characters other than quotes and backslashes)", id: id)
            }
            history.append(revision)
        }
        return history
    }
}
