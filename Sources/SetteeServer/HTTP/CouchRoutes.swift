/// The routes the server answers, by the shape of their paths: the router
/// dispatches on these lists, so a route it answers is a route listed here,
/// and the gate tests probe every one of them as hostile clients.
enum CouchRoutes {
    /// `/{db}/{operation}`: the database's own endpoints.
    static let databaseOperations: Set<String> = [
        "_all_docs", "_design_docs", "_local_docs", "_bulk_docs", "_bulk_get", "_changes", "_purge", "_compact", "_revs_limit", "_purged_infos_limit",
        "_find", "_explain", "_index", "_ensure_full_commit", "_view_cleanup", "_revs_diff", "_missing_revs",
    ]
    /// `/{db}/{operation}/…`, each with its own router.
    static let databaseSections: Set<String> = ["_security", "_partition", "_design", "_local"]
    /// `/{db}/_design/{ddoc}/{operation}/…`.
    static let designOperations: Set<String> = ["_info", "_view", "_show", "_list", "_update", "_rewrite"]
    /// A path of every route under database `db`, and of its design document
    /// `ddoc` (with view `v`, show, list, update and rewrite `f`), a document
    /// `id` and its attachment `a`: what a test sends each method to.
    static func examplePaths(database db: String, document id: String) -> [String] {
        var paths = ["/\(db)", "/\(db)/\(id)", "/\(db)/\(id)/a", "/\(db)/_local/\(id)"]
        paths += databaseOperations.sorted().map { "/\(db)/\($0)" }
        paths += ["/\(db)/_all_docs/queries", "/\(db)/_security", "/\(db)/_partition/p", "/\(db)/_partition/p/_all_docs",
                  "/\(db)/_partition/p/_find", "/\(db)/_partition/p/_design/ddoc/_view/v", "/\(db)/_design/ddoc",
                  "/\(db)/_design/ddoc/a", "/\(db)/_design/ddoc/_view/v/queries"]
        for operation in designOperations.sorted() {
            let rest = operation == "_info" ? "" : operation == "_view" ? "/v" : "/f/\(id)"
            paths.append("/\(db)/_design/ddoc/\(operation)\(rest)")
        }
        paths.append("/\(db)/_design/ddoc/_rewrite/\(id)")
        return paths
    }
}
