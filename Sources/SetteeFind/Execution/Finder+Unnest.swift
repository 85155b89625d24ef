import SetteeCore
import SetteeStorage
import SetteeViews

extension Finder {
    /// Runs an ``UnnestRequest``: the documents with a matching element, from
    /// the array index on the path that narrows them most (else every
    /// document), in `_id` order; in each, the elements at the path matched
    /// one by one; `skip`, `limit` and `bookmark` count elements, and a
    /// bookmark resumes after the element it names, within its document.
    /// - Throws: ``MangoError`` for a bad path, selector or bookmark; storage errors.
    package func findElements(_ request: UnnestRequest, indexes: [MangoIndex], reader: IndexReader?) throws -> UnnestResult {
        let started = ContinuousClock.now
        let path = try ArrayPath(request.path)
        _ = try MangoSelector(request.parentSelector)
        // The element's conditions, normalized as inside `$elemMatch`; nil for every element.
        var element: MangoSelector?
        var elementCondition: JSONValue?
        if request.elementSelector != [:] {
            let selector = try MangoSelector(["element": ["$elemMatch": request.elementSelector]])
            element = selector
            elementCondition = selector.normalized["element"]
        }
        // A document has a matching element only if it matches this, checked on its text before it is parsed.
        var required: [JSONValue] = []
        if request.parentSelector != [:] { required.append(request.parentSelector) }
        if let elementCondition { required.append(path.selector(endingWith: elementCondition)) }
        let documentSelector = try MangoSelector(required.count == 1 ? required[0] : required.isEmpty ? [:] : ["$and": .array(required)])

        var chosen: (index: MangoIndex, lookup: ArrayLookup, narrowed: Int)?
        for index in indexes where index.type == "array" && index.partialFilterSelector == nil {
            guard let name = index.arrayPath, let indexPath = try? ArrayPath(name),
                  indexPath.segments.map(\.parts) == path.segments.map(\.parts) else { continue }
            // Every element is wanted: only an index without expressions has an entry for each.
            let lookup = elementCondition.map { ArrayLookup.lastSegment($0, columns: ArrayLookup.columns(of: index)) }
                ?? (index.fields.isEmpty ? ArrayLookup(keys: .ranges([]), operation: "$elemMatch") : nil)
            guard let lookup, case .ranges(let ranges) = lookup.keys else { continue }
            if let chosen, chosen.narrowed >= ranges.count { continue }
            chosen = (index, lookup, ranges.count)
        }

        // Where the previous page ended: an element (its document and position), not a document.
        let resume = try request.bookmark.map { text throws(MangoError) in try ElementBookmark(decoding: text) }
        var stats = FindResult.ExecutionStats()
        var results: [UnnestedElement] = []
        var last: ElementBookmark?
        let limit = request.limit ?? .max
        var skip = request.skip
        func visit(_ id: String, _ json: [UInt8]) throws -> Bool {
            stats.totalDocsExamined += 1
            guard try json.withUnsafeBytes({ try documentSelector.matches(json: $0) }) else { return true }
            let document = try JSONParser.parse(json)
            // How each number is written, for a `$mod` among the element's conditions.
            var forms: [JSONValue]?
            if let element, element.readsNumberForms {
                forms = path.elements(in: try json.withUnsafeBytes { try MangoSelector.numberForms($0) })
            }
            for (position, value) in path.elements(in: document).enumerated() {
                if let resume, resume.documentID == id, position <= resume.position { continue }
                if let element {
                    let wrapped: JSONValue = .object([(key: "element", value: .array([value]))])
                    let matched = if let forms, position < forms.count {
                        element.matches(wrapped, form: .object([(key: "element", value: .array([forms[position]]))]))
                    } else {
                        element.matches(wrapped)
                    }
                    if !matched { continue }
                }
                if skip > 0 {
                    skip -= 1
                    continue
                }
                results.append(UnnestedElement(documentID: id, position: position, element: value, document: document))
                last = ElementBookmark(documentID: id, position: position)
                if results.count >= limit { return false }
            }
            return true
        }
        let documents = DocumentsByID(store: store)
        if limit > 0 {
            if let chosen, let reader {
                if !chosen.lookup.isEmpty {
                    let read = ArrayIndexRead(index: chosen.index, lookup: chosen.lookup)
                    var ids = try read.candidates(reader: reader, stats: &stats)
                    // The bookmarked document's later elements, then the documents after it.
                    if let resume { ids.removeAll { JSONValue.compareBytes($0, resume.documentID) < 0 } }
                    try documents.forEach(of: ids, after: nil, visit)
                }
            } else {
                var more = true
                if let resume { try documents.forEach(of: [resume.documentID], after: nil) { id, json in
                    more = try visit(id, json)
                    return more
                } }
                if more { try documents.forEach(after: resume?.documentID, visit) }
            }
        }
        stats.resultsReturned = results.count
        stats.executionTimeMilliseconds = Double((ContinuousClock.now - started) / .microseconds(1)) / 1000
        return UnnestResult(elements: results, index: chosen?.index ?? .allDocuments, executionStats: stats,
                            bookmark: last?.encoded ?? request.bookmark ?? "nil")
    }
}
