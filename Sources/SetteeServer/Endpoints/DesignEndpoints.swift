import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/{db}/_design/{ddoc}`, its `_info` and its views.
extension CouchAPI {
    func designEndpoint(_ name: String, designName: String, rest: [String], _ request: inout CouchRequest) async throws -> Response {
        let id = "_design/" + designName
        guard let first = rest.first else { return try await documentEndpoint(name, id: id, &request) }
        guard !first.hasPrefix("_") || CouchRoutes.designOperations.contains(first) else { throw CouchError.missing }
        let db = try databases.database(name)
        if first == "_view", rest.count == 3, rest[2] == "queries" { return try await viewQueries(db, designName, rest[1], &request) }
        switch (first, rest.count) {
        case ("_info", 1):
            try allow(request, "GET,HEAD")
            guard try await db.document(id) != nil else { throw CouchError.missing }
            let infos = try await db.viewInfo().filter { $0.path.hasPrefix(designName + "/") }
            let bytes = infos.reduce(0) { $0 + $1.bytes }
            let signature = infos.map(\.signature).joined()
            let sizes: JSONValue = ["file": .number(Double(bytes)), "external": .number(Double(bytes)), "active": .number(Double(bytes))]
            let pending: JSONValue = ["minimum": 0, "preferred": 0, "total": 0]
            let viewIndex: JSONValue = [
                    "updates_pending": pending,
                    "waiting_commit": false, "waiting_clients": 0, "updater_running": false, "compact_running": false,
                    "signature": .string(signature.isEmpty ? String(repeating: "0", count: 32) : String(signature.prefix(32))),
                    "language": "javascript",
                    "sizes": sizes,
                    "update_seq": .number(Double(infos.map(\.indexedSequence).min() ?? 0)),
                    "purge_seq": 0,
            ]
            return CouchResponse.json(["name": .string(designName), "view_index": viewIndex])
        case ("_view", 2):
            try allow(request, "GET,HEAD,POST")
            let body = request.method == .post ? try await request.jsonObjectBody() : nil
            let options = try Self.viewOptions(request.parameters, body: body)
            let result = try await db.query(designDocument: designName, view: rest[1], options: options)
            return CouchResponse.json(text: result.json)
        case ("_show", _), ("_list", _), ("_update", _), ("_rewrite", _):
            return try await designFunctionEndpoint(name, db, designName: designName, rest: rest, &request)
        case (let attachment, _) where !attachment.hasPrefix("_"):
            return try await attachmentEndpoint(name, id: id, attachment: rest.joined(separator: "/"), &request)
        default:
            throw CouchError(.notFound, "not_found", "missing")
        }
    }
}
