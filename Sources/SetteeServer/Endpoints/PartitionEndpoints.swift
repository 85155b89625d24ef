import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/{db}/_partition/{partition}` and what it holds, as `chttpd_db:handle_partition_req/2`
/// answers them: the partition's information, and its `_all_docs`, `_find`,
/// `_explain` and views, each the database's own restricted to the partition;
/// `_index` and a design document's other functions (`_info`, `_show`,
/// `_list`, `_update`, `_rewrite`) answered as the database's, with the
/// partition in the query string. Anything else is `not_found`.
extension CouchAPI {
    func partitionEndpoint(_ name: String, _ request: inout CouchRequest) async throws -> Response {
        let segments = request.segments
        guard segments.count >= 3 else { throw CouchError.badRequest("invalid_partition_req") }
        let partition = segments[2]
        let db = try databases.database(name)
        if segments.count == 3 {
            switch request.method {
            case .get, .head:
                try Partition.validate(partition)
                try await requirePartitioned(db)
                return CouchResponse.json(try await partitionInfo(name, db, partition))
            case .post where partition.hasPrefix("_"):
                throw PartitionError(error: "illegal_partition", reason: "Partition must not start with an underscore")
            default:
                throw CouchError.methodNotAllowed("GET")
            }
        }
        try await requirePartitioned(db)
        try Partition.validate(partition)
        if let given = request.parameter("partition"), given != partition {
            throw CouchError.badRequest("Conflicting value for `partition` in query string")
        }
        let rest = Array(segments.dropFirst(3))
        switch rest[0] {
        case "_all_docs" where rest.count == 1:
            try allow(request, "GET,HEAD,POST")
            let body = request.method == .post ? try await request.jsonObjectBody() : nil
            var options = try Self.viewOptions(request.parameters.filter { $0.name != "partition" }, body: body)
            options.partition = partition
            return CouchResponse.json(text: try await db.allDocuments(options: options).json)
        case "_find" where rest.count == 1, "_explain" where rest.count == 1:
            try allow(request, "POST")
            let body = try await request.jsonObjectBody().lastMemberWins
            if let given = body["partition"], given != .string(partition) {
                throw CouchError.badRequest("Conflicting value for `partition` in the request body: \(given.jsonText), in the path: \"\(partition)\"")
            }
            try FindRequest.refuseIntegersWrittenAsFloats(jsonText: try await request.decodedBodyBytes())
            var find = try FindRequest(json: body)
            find.partition = partition
            if rest[0] == "_explain" { return CouchResponse.json(try await db.explain(find)) }
            return CouchResponse.json(text: try await db.find(find).jsonText)
        case "_design" where rest.count == 4 && rest[2] == "_view":
            try allow(request, "GET,HEAD,POST")
            let body = request.method == .post ? try await request.jsonObjectBody() : nil
            var options = try Self.viewOptions(request.parameters.filter { $0.name != "partition" }, body: body)
            options.partition = partition
            let result = try await db.query(designDocument: rest[1], view: rest[3], options: options)
            return CouchResponse.json(text: result.json)
        case "_index":
            return try await rerouted(name, rest, partition: partition, &request)
        case "_design" where rest.count >= 3 && rest[2].hasPrefix("_"):
            // `_info`, `_show`, `_list`, `_update`, `_rewrite`: the design document's own, the partition
            // in the query string (chttpd_db:handle_partition_req/2 hands them to handle_design_req/2).
            return try await rerouted(name, rest, partition: partition, &request)
        default:
            throw CouchError.missing
        }
    }

    /// The request answered as `/{db}/{rest}?partition={partition}`.
    private func rerouted(_ name: String, _ rest: [String], partition: String, _ request: inout CouchRequest) async throws -> Response {
        request.segments = [name] + rest
        request.parameters.removeAll { $0.name == "partition" }
        request.parameters.append((name: "partition", value: partition))
        return try await dispatch(&request)
    }

    /// `bad_request` "database is not partitioned" unless it is.
    private func requirePartitioned(_ db: Database) async throws {
        guard try await db.isPartitioned() else { throw CouchError.badRequest("database is not partitioned") }
    }

    /// `GET /{db}/_partition/{partition}` (`fabric:get_partition_info/2`).
    private func partitionInfo(_ name: String, _ db: Database, _ partition: String) async throws -> JSONValue {
        let counts = try await db.partitionCounts(partition)
        return [
            "db_name": .string(name),
            "sizes": ["active": .number(Double(counts.activeBytes)), "external": .number(Double(counts.externalBytes))],
            "partition": .string(partition),
            "doc_count": .number(Double(counts.documentCount)),
            "doc_del_count": .number(Double(counts.deletedDocumentCount)),
        ]
    }

    /// The `partitioned` parameter of `PUT /{db}` (`chttpd_db:parse_partitioned_opt/1`).
    static func partitionedParameter(_ request: CouchRequest) throws(CouchError) -> Bool {
        switch request.parameter("partitioned") {
        case nil, "false": return false
        case "true": return true
        default: throw CouchError.badRequest("Invalid `partitioned` parameter")
        }
    }
}
