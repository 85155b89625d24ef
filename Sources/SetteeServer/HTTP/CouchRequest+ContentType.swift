import HTTPTypes

extension CouchRequest {
    /// Refuses a request whose `Content-Type` is not `type` (parameters after
    /// `;` allowed), as CouchDB's `chttpd:validate_ctype/2` refuses it:
    /// 415 `bad_content_type`, "Content-Type must be application/json".
    func requireContentType(_ type: String = "application/json") throws(CouchError) {
        guard let header = header(.contentType),
              header.split(separator: ";", omittingEmptySubsequences: true).first.map(String.init) == type
        else { throw CouchError(.unsupportedMediaType, "bad_content_type", "Content-Type must be \(type)") }
    }
}
