extension FindResult.ExecutionStats {
    /// Counts `count` documents read to match them against the selector: as
    /// CouchDB's quorum reads when the request's `r` is above 1 (CouchDB then
    /// reads the index without the documents, and each document apart).
    mutating func countDocumentsExamined(_ count: Int, for request: FindRequest) {
        if request.r > 1 {
            totalQuorumDocsExamined += count
        } else {
            totalDocsExamined += count
        }
    }
}

extension FindRequest {
    /// Whether a read goes on past a full page to the next match, so that
    /// its execution statistics count what CouchDB's count: CouchDB's view
    /// read stops at the first match after the page (`mango_cursor_view:handle_doc/2`),
    /// having examined every key and document up to it. Without statistics
    /// asked for, the read stops at the page's last document.
    var readsPastPage: Bool { executionStats }
}
