import SetteeCore

extension Explanation {
    /// `explain` of a request no index can serve (a sort no index has):
    /// where `find` refuses it with `no_usable_index`, CouchDB 3.5's
    /// `_explain` answers with `"index": null`, no `mrargs`, and every index
    /// as a candidate with why it cannot serve (`mango_cursor:create_cursor/4`
    /// with no index).
    /// - Throws: `invalid_index` when `allow_fallback` is false, as CouchDB
    ///   refuses a request no index named or chosen can serve.
    static func explainWithoutIndex(_ request: FindRequest, selector: JSONValue, indexes: [MangoIndex],
                                    databaseName: String) throws(MangoError) -> JSONValue {
        if !request.allowFallback {
            let reason: String
            switch request.useIndex.count {
            case 0: reason = "You must specify an index with the `use_index` parameter."
            case 1: reason = "_design/\(MangoIndex.designDocumentName(request.useIndex[0])) specified by `use_index` could not be found or it is not suitable."
            default: reason = "_design/\(MangoIndex.designDocumentName(request.useIndex[0])), \(request.useIndex[1]) specified by `use_index` could not be found or it is not suitable."
            }
            throw MangoError(error: "invalid_index", reason: reason)
        }
        // The candidates the planner weighed (partial indexes only when named), none usable.
        let sortFields = request.sort.map(\.field)
        var candidates = indexes.filter { $0.partialFilterSelector == nil }
        for index in indexes where QueryPlanner.matches(index, request.useIndex) && !candidates.contains(index) { candidates.append(index) }
        let unusable = candidates.map { index in
            (index: index, reasons: QueryPlanner.usabilityProblems(index, selector: selector, sortFields: sortFields))
        }
        let plan = QueryPlanner.Plan(index: .allDocuments, ranges: [], ranked: [], unusable: unusable, ignoredUseIndex: false)
        guard case .object(let members) = explain(request, plan: plan, selector: selector, indexes: indexes, databaseName: databaseName)
        else { return .null }
        return .object(members.compactMap { member in
            switch member.key {
            case "index": (member.key, .null)
            case "mrargs", "covering": nil
            default: member
            }
        })
    }
}
