import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/{db}/_index`: Mango's JSON indexes (list, create, delete, bulk delete),
/// path by path and method by method as `mango_httpd.erl` answers them.
extension CouchAPI {
    func indexEndpoint(_ db: Database, _ request: inout CouchRequest) async throws -> Response {
        let rest = Array(request.segments.dropFirst(2))
        switch rest.count {
        case 0:
            switch request.method {
            case .get, .head: return try await listIndexes(db, request)
            case .post:
                try request.requireContentType()
                let body = try await request.jsonObjectBody()
                try IndexRequest.refuseIntegersWrittenAsFloats(jsonText: try await request.decodedBodyBytes())
                let created = try await db.createIndex(try IndexRequest(json: body))
                return CouchResponse.json(.ok, created.json)
            default: throw CouchError.methodNotAllowed("GET,POST")
            }
        case 1 where rest[0] == "_bulk_delete":
            try allow(request, "POST")
            try request.requireContentType()
            return try await bulkDeleteIndexes(db, &request)
        case 3, 4:
            // `/_index/{ddoc}/{type}/{name}` or `/_index/_design/{ddoc}/{type}/{name}`.
            guard rest.count == 3 || rest[0] == "_design" else { throw CouchError(.notFound, "not_found", "missing") }
            try allow(request, "DELETE")
            let designID = rest.count == 4 ? "_design/" + rest[1] : Self.designID(rest[0])
            let type = rest[rest.count - 2], name = rest[rest.count - 1]
            guard type == "json" else { throw CouchError.missing }
            do {
                try await db.deleteIndex(designDocument: designID, name: name)
            } catch let error as MangoError where error.status == 404 {
                throw CouchError.missing
            }
            return CouchResponse.ok()
        default:
            throw CouchError(.notFound, "not_found", "missing")
        }
    }

    /// `GET /{db}/_index?limit=…&skip=…`: CouchDB refuses a limit below 1 or
    /// a negative skip with a 500 `invalid_list_index_params`.
    private func listIndexes(_ db: Database, _ request: CouchRequest) async throws -> Response {
        let indexes = try await db.listIndexes()
        let total = indexes.count
        func integer(_ name: String) throws(CouchError) -> Int? {
            guard let text = request.parameter(name) else { return nil }
            guard let value = Int(text) else {
                throw CouchError(.badRequest, "query_parse_error", "Invalid value for integer parameter \(name): \"\(text)\"")
            }
            return value
        }
        let invalid = CouchError(.internalServerError, "invalid_list_index_params", "Index parameter ranges: limit > 1, skip > 0")
        let limit = try integer("limit") ?? total
        let skip = try integer("skip") ?? 0
        guard limit >= 1 || request.parameter("limit") == nil, skip >= 0 else { throw invalid }
        let page = indexes.dropFirst(min(skip, total)).prefix(max(limit, 0))
        return CouchResponse.json(["total_rows": .number(Double(total)), "indexes": .array(page.map(\.json))])
    }

    /// `POST /{db}/_index/_bulk_delete` `{"docids": […]}`: each design
    /// document's indexes deleted, one result per id.
    private func bulkDeleteIndexes(_ db: Database, _ request: inout CouchRequest) async throws -> Response {
        let body = try await request.jsonObjectBody()
        var ids: [String] = []
        if let docids = body["docids"] {
            guard case .array(let values) = docids else {
                throw CouchError(.badRequest, "invalid_bulk_docids", "Bulk Delete requires an array of non-null docids")
            }
            for value in values {
                guard case .string(let id) = value else {
                    throw CouchError(.badRequest, "invalid_bulk_docids", "Bulk Delete requires an array of non-null docids")
                }
                ids.append(id)
            }
        }
        let indexes = try await db.listIndexes()
        var success: [JSONValue] = [], fail: [JSONValue] = []
        for id in ids {
            let designID = Self.designID(id)
            let names = indexes.filter { $0.designDocument == designID && $0.type == "json" }.map(\.name)
            do {
                guard !names.isEmpty else { throw CouchError.missing }
                for name in names { try await db.deleteIndex(designDocument: designID, name: name) }
                success.append(["id": .string(designID), "ok": true])
            } catch {
                fail.append(["id": .string(designID), "error": .string(CouchError(from: error).error)])
            }
        }
        return CouchResponse.json(["success": .array(success), "fail": .array(fail)])
    }

    /// `NAME` or `_design/NAME` as `_design/NAME`.
    static func designID(_ nameOrID: String) -> String {
        nameOrID.hasPrefix("_design/") ? nameOrID : "_design/" + nameOrID
    }
}
