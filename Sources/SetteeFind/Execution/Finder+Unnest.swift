import SetteeCore
import SetteeStorage

extension Finder {
    /// Runs an ``UnnestRequest``: the documents with a matching element, from
    /// the array index on the path that narrows them most (else every
    /// document), in `_id` order; in each, the elements at the path matched
    /// one by one.
    /// - Throws: ``MangoError`` for a bad path or selector; storage errors.
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

        var stats = FindResult.ExecutionStats()
        var results: [UnnestedElement] = []
        let limit = request.limit ?? .max
        var skip = request.skip
        func visit(_ id: String, _ json: [UInt8]) throws -> Bool {
            stats.totalDocsExamined += 1
            guard try json.withUnsafeBytes({ try documentSelector.matches(json: $0) }) else { return true }
            let document = try JSONParser.parse(json)
            for (position, value) in path.elements(in: document).enumerated() {
                if let element, !element.matches(.object([(key: "element", value: .array([value]))])) { continue }
                if skip > 0 {
                    skip -= 1
                    continue
                }
                results.append(UnnestedElement(documentID: id, position: position, element: value, document: document))
                if results.count >= limit { return false }
            }
            return true
        }
        let documents = DocumentsByID(store: store)
        if limit > 0 {
            if let chosen, let reader {
                if !chosen.lookup.isEmpty {
                    let read = ArrayIndexRead(index: chosen.index, lookup: chosen.lookup, update: request.update)
                    try documents.forEach(of: try read.candidates(reader: reader, stats: &stats), after: nil, visit)
                }
            } else {
                try documents.forEach(after: nil, visit)
            }
        }
        stats.resultsReturned = results.count
        stats.executionTimeMilliseconds = Double((ContinuousClock.now - started) / .microseconds(1)) / 1000
        return UnnestResult(elements: results, index: chosen?.index ?? .allDocuments, executionStats: stats)
    }
}
