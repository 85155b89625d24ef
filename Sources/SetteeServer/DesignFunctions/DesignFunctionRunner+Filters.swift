import Foundation
import Settee
import HTTPTypes

extension DesignFunctionRunner {
    /// Asks `function` (`["filters", name]` or `["views", name, "map"]`) of
    /// the design document `ddoc` whether each of `documents` passes, as
    /// CouchDB's `couch_query_servers:filter_docs`/`filter_view` do.
    ///
    /// - Parameters:
    ///   - request: The `req` argument of a filter function; nil for a view.
    ///   - tenant: The database's folder (see ``call(key:tenant:designDocument:path:arguments:input:pipe:)``).
    /// - Throws: ``CouchError`` with the query server's error type and reason.
    func passes(_ documents: [JSONValue], ddoc: JSONValue, id: String, function: [String], request: JSONValue?,
                tenant: String? = nil) async throws -> [Bool] {
        guard !documents.isEmpty else { return [] }
        var arguments: [JSONValue] = [.array(documents)]
        if let request { arguments.append(request) }
        let text = ddoc.jsonText
        // The design document in this revision and content: sent to a worker once.
        let key = "\(id)@\(ddoc["_rev"]?.stringValue ?? "")#\(text.hashValue)"
        let answers = try await call(key: key, tenant: tenant, designDocument: text, path: function, arguments: .array(arguments))
        guard let answer = answers.last, case .array(let parts) = answer, parts.count == 2, parts[0] == true,
              case .array(let passes) = parts[1], passes.count == documents.count else {
            throw CouchError(.internalServerError, "os_process_error",
                             "unexpected answer from the query server: \(answers.last?.jsonText ?? "nothing")")
        }
        return passes.map { $0 == true }
    }
}
