import SetteeCore
import SetteeViews
import SetteeStorage

/// `find` served by an array index: the ids of the documents with an entry
/// the lookup allows (each document once, however many of its elements
/// match), then those documents in `_id` order, each matched against the
/// whole selector, skipped, taken and projected, as a scan of `_all_docs`
/// would return them (or in the reverse order for a descending sort on
/// `_id`). A bookmark resumes after the document it names.
struct ArrayIndexRead {
    let index: MangoIndex
    let lookup: ArrayLookup
    /// Whether the documents are read in descending `_id` order (`"sort": [{"_id": "desc"}]`).
    var descending = false

    /// The ids of the documents with an entry the lookup allows, sorted by bytes, each once.
    func candidates(reader: IndexReader, stats: inout FindResult.ExecutionStats) throws -> [String] {
        var keysExamined = 0
        func ids(_ scan: IndexScan) throws -> Set<String> {
            var found = Set<String>()
            try reader(index, scan) { entry in
                keysExamined += 1
                found.insert(entry.row.id)
                return true
            }
            return found
        }
        var result = Set<String>()
        switch lookup.keys {
        case .ranges(let ranges):
            result = try ids(scan(ranges))
        case .anyOf(let values):
            for value in values { result.formUnion(try ids(scan(exactly: value))) }
        case .allOf(let values):
            var common: Set<String>?
            for value in values {
                let found = try ids(scan(exactly: value))
                common = common.map { $0.intersection(found) } ?? found
                if common?.isEmpty == true { break }
            }
            result = common ?? []
        }
        stats.totalKeysExamined += keysExamined
        return result.sorted { JSONValue.compareBytes($0, $1) < 0 }
    }

    /// The entries of the leading expressions' ranges (rows at excluded bounds are read, and their documents matched after).
    private func scan(_ ranges: [FieldRange]) -> IndexScan {
        let (low, high) = IndexRead.keyBounds(ranges)
        return IndexScan(range: .keys(from: CollationKey.encode(.array(low), mode: .unicode),
                                      to: CollationKey.encode(.array(high), mode: .unicode), descending: false))
    }

    /// The entries keyed `[value]`.
    private func scan(exactly value: JSONValue) -> IndexScan {
        let key = CollationKey.encode([value], mode: .unicode)
        return IndexScan(range: .keys(from: key, to: key, descending: false))
    }

    /// Runs the read: the page of results and the id of the last one.
    func run(store: DocumentStore, selector: MangoSelector, projection: FieldProjection, request: FindRequest, after bookmark: Bookmark?,
             reader: IndexReader, stats: inout FindResult.ExecutionStats) throws -> (documents: [FoundDocument], last: String?) {
        guard request.limit > 0 else { return ([], nil) }
        var ids = try candidates(reader: reader, stats: &stats)
        if descending {
            ids.reverse()
            if let after = bookmark?.id { ids.removeAll { JSONValue.compareBytes($0, after) >= 0 } }
        }
        var documents: [FoundDocument] = []
        var last: String?
        var skip = request.skip
        var examined = 0
        try DocumentsByID(store: store).forEach(of: ids, after: descending ? nil : bookmark?.id) { id, json in
            examined += 1
            guard try json.withUnsafeBytes({ try selector.matches(json: $0) }) else { return true }
            if skip > 0 {
                skip -= 1
                return true
            }
            documents.append(try projection.extract(jsonText: String(decoding: json, as: UTF8.self)))
            last = id
            return documents.count < request.limit
        }
        stats.countDocumentsExamined(examined, for: request)
        return (documents, last)
    }
}
