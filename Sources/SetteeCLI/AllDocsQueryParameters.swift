import ArgumentParser

/// The CouchDB view parameters that apply to `_all_docs`: those of
/// ``ViewQueryParameters`` but for the ones about reducing (`group`,
/// `group_level`, `reduce`: `_all_docs` has no reduce), about an index
/// (`update`, `stale`, `stable`: it has none to bring up to date), `sorted`,
/// and the `*_docid` bounds (its keys are the document ids).
struct AllDocsQueryParameters: ParsableArguments {
    @Option(name: .couchDB("key"), help: "Only the document with this id (a JSON string).") var key: String?
    @Option(name: .couchDB("keys"), help: "Only the documents with these ids, in this order (a JSON array).") var keys: String?
    @Option(name: .couchDB("startkey"), help: "Documents from this id (a JSON string).") var startkey: String?
    @Option(name: .couchDB("start_key"), help: "Same as --startkey.") var startKey: String?
    @Option(name: .couchDB("endkey"), help: "Documents up to this id (a JSON string).") var endkey: String?
    @Option(name: .couchDB("end_key"), help: "Same as --endkey.") var endKey: String?
    @Option(name: .couchDB("inclusive_end"), help: ArgumentHelp("Whether the end id is included (true).", valueName: "true|false")) var inclusiveEnd: String?
    @Option(name: .couchDB("descending"), help: ArgumentHelp("Reverse order (false).", valueName: "true|false")) var descending: String?
    @Option(name: .couchDB("limit"), help: "At most this many rows.") var limit: String?
    @Option(name: .couchDB("skip"), help: "Skip this many rows first (0).") var skip: String?
    @Option(name: .couchDB("include_docs"), help: ArgumentHelp("Include each row's document (false).", valueName: "true|false")) var includeDocs: String?
    @Option(name: .couchDB("conflicts"), help: ArgumentHelp("Include conflicts with include_docs (false).", valueName: "true|false")) var conflicts: String?
    @Option(name: .couchDB("update_seq"), help: ArgumentHelp("Include the database's update_seq (false).", valueName: "true|false")) var updateSeq: String?
    @Option(name: .couchDB("partition"), help: "In a partitioned database, only this partition's documents (CouchDB's /db/_partition/P/_all_docs).") var partition: String?

    var parameters: [(name: String, value: String)] {
        let all: [(String, String?)] = [
            ("key", key), ("keys", keys), ("startkey", startkey), ("start_key", startKey), ("endkey", endkey),
            ("end_key", endKey), ("inclusive_end", inclusiveEnd), ("descending", descending), ("limit", limit), ("skip", skip),
            ("include_docs", includeDocs), ("conflicts", conflicts), ("update_seq", updateSeq), ("partition", partition),
        ]
        return all.compactMap { name, value in value.map { (name: name, value: $0) } }
    }
}
