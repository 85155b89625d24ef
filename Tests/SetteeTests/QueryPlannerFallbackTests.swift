import Testing
@testable import SetteeFind
import Settee

/// `allow_fallback: false` without `use_index`, as CouchDB's Mango suite
/// (05-index-selection-test `test_no_index_without_fallback`) asks.
struct QueryPlannerFallbackTests {
    private func normalized(_ text: String) throws -> JSONValue {
        try MangoSelector(try JSONValue(parsing: text)).normalized
    }

    @Test("Without use_index and without fallback, a query only _all_docs can serve is refused as CouchDB refuses it")
    func noFallbackWithoutUseIndex() throws {
        let byCompany = MangoIndex(designDocument: "_design/c", name: "company", type: "json", fields: [.init("company")],
                                   partialFilterSelector: nil)
        let indexes = [MangoIndex.allDocuments, byCompany]
        #expect(throws: MangoError(error: "invalid_index", reason: "You must specify an index with the `use_index` parameter.")) {
            try QueryPlanner.plan(try normalized(#"{"manager": true}"#), sort: [], useIndex: [], allowFallback: false, indexes: indexes)
        }
        let served = try QueryPlanner.plan(try normalized(#"{"company": "x"}"#), sort: [], useIndex: [], allowFallback: false, indexes: indexes)
        #expect(served.index == byCompany)
    }
}

/// `$beginsWith` with a prefix that is not a string, as CouchDB's Mango suite
/// (25-beginswith-test `test_invalid_operand`) asks.
struct BeginsWithOperandTests {
    @Test("$beginsWith with a non-string prefix is an invalid operator, in CouchDB's words")
    func nonStringPrefix() throws {
        #expect(throws: MangoError(error: "invalid_operator", reason: "Invalid operator: $beginsWith")) {
            try MangoSelector(try JSONValue(parsing: #"{"_id": {"$beginsWith": true}}"#))
        }
    }
}
