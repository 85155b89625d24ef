import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/{db}/_index`: Mango's JSON indexes (list, create, delete, bulk delete).
extension CouchResponder {
    func indexEndpoint(_ db: Database, _ request: inout CouchRequest) async throws -> Response {
        let rest = Array(request.segments.dropFirst(2))
        switch (request.method, rest.count) {
        case (.get, 0), (.head, 0):
            var indexes = try await db.listIndexes()
            let total = indexes.count
            if let skip = request.parameter("skip").flatMap(Int.init) { indexes = Array(indexes.dropFirst(max(0, skip))) }
            if let limit = request.parameter("limit").flatMap(Int.init) { indexes = Array(indexes.prefix(max(0, limit))) }
            return CouchResponse.json(["total_rows": .number(Double(total)), "indexes": .array(indexes.map(\.json))])
        case (.post, 0):
            let created = try await db.createIndex(try IndexRequest(json: try await request.jsonObjectBody()))
            return CouchResponse.json(.ok, created.json)
        case (.post, 1) where rest[0] == "_bulk_delete":
            let body = try await request.jsonObjectBody()
            guard case .array(let ids)? = body["docids"] else {
                throw CouchError.badRequest("`docids` must be an array of design document ids")
            }
            var success: [JSONValue] = [], fail: [JSONValue] = []
            for case .string(let id) in ids {
                let designID = id.hasPrefix("_design/") ? id : "_design/" + id
                do {
                    guard let document = try await db.document(designID) else { throw CouchError.missing }
                    _ = try await db.delete(designID, revision: document.revision)
                    success.append([.string(designID): ["ok": true]].jsonObject)
                } catch {
                    fail.append([.string(designID): ["error": .string(CouchError(from: error).reason)]].jsonObject)
                }
            }
            return CouchResponse.json(["success": .array(success), "fail": .array(fail)])
        case (.delete, 3), (.delete, 2):
            // `/_index/{ddoc}/json/{name}` (or `/_index/{ddoc}/{name}`).
            try await db.deleteIndex(designDocument: rest[0], name: rest[rest.count - 1])
            return CouchResponse.ok()
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }
}

private extension Dictionary where Key == JSONValue, Value == JSONValue {
    var jsonObject: JSONValue { .object(map { (key: $0.key.stringValue ?? "", value: $0.value) }) }
}
