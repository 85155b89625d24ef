import Testing
@testable import SetteeFind
import Settee

private func normalized(_ text: String) throws -> JSONValue {
    try MangoSelector(try JSONValue(parsing: text)).normalized
}

private func index(_ design: String, _ name: String, _ fields: [String], partial: JSONValue? = nil) -> MangoIndex {
    MangoIndex(designDocument: "_design/" + design, name: name, type: "json",
               fields: fields.map { FindRequest.SortField($0) }, partialFilterSelector: partial)
}

@Suite("find's query planner, as CouchDB's mango planner chooses")
struct QueryPlannerTests {
    @Test("Ranges narrow as mango_idx_view:range/5 narrows them")
    func ranges() throws {
        func range(_ selector: String, _ field: String = "a") throws -> FieldRange {
            FieldRange.of(field, in: try normalized(selector))
        }
        #expect(try range(#"{"a": 5}"#).equalValue == 5)
        #expect(try range(#"{"a": {"$gt": 1, "$lte": 9}}"#) == .range(low: .value(1), lowInclusive: false, high: .value(9), highInclusive: true))
        #expect(try range(#"{"a": {"$gt": 5, "$lt": 5}}"#) == .empty)
        #expect(try range(#"{"a": {"$gte": 5, "$lte": 5}}"#).equalValue == 5)
        #expect(try range(#"{"a": {"$gt": 5, "$eq": 5}}"#) == .empty)
        #expect(try range(#"{"a": {"$lt": 3}, "b": 1}"#) == .range(low: .minimum, lowInclusive: false, high: .value(3), highInclusive: false))
        #expect(try range(#"{"a": {"$regex": "x"}}"#) == .everything, "other operators are filters, not ranges")
        #expect(try range(#"{"a": {"$beginsWith": "ab"}}"#) == .range(low: .value("ab"), lowInclusive: true, high: .value("ab\u{FFFF}"), highInclusive: true))
        #expect(try range(#"{"a": {"$gt": "x"}}"#, "b") == .everything)
    }

    @Test("Required and constant fields as mango_selector decides them")
    func requiredAndConstant() throws {
        #expect(QueryPlanner.hasRequiredFields(try normalized(#"{"A": "foo"}"#), ["A"]))
        #expect(!QueryPlanner.hasRequiredFields(try normalized(#"{"A": "foo"}"#), ["B"]))
        #expect(!QueryPlanner.hasRequiredFields(try normalized("{}"), ["A"]))
        #expect(!QueryPlanner.hasRequiredFields(try normalized(#"{"A": {"$exists": false}}"#), ["A"]))
        #expect(QueryPlanner.hasRequiredFields(try normalized(#"{"$and": [{"A": "foo"}, {"B": "foo"}]}"#), ["A"]))
        #expect(!QueryPlanner.hasRequiredFields(try normalized(#"{"$or": [{"A": "foo"}, {"B": "foo"}]}"#), ["A"]))
        #expect(QueryPlanner.hasRequiredFields(try normalized(#"{"A": "foo", "$or": [{"B": "bar"}, {"B": "baz"}], "C": "qux"}"#), ["A", "B", "C"]))
        #expect(!QueryPlanner.hasRequiredFields(try normalized(#"{"$and": [{"$and": [{"A": "foo"}]}, {"$or": [{"A": "foo"}, {"B": "foo"}]}]}"#), ["A", "B"]))
        #expect(QueryPlanner.isConstantField(try normalized(#"{"cars": "2", "age": {"$gt": 10}}"#), "cars"))
        #expect(!QueryPlanner.isConstantField(try normalized(#"{"cars": "2", "age": {"$gt": 10}}"#), "age"))
        #expect(!QueryPlanner.isConstantField(try normalized(#"{"$or": [{"A": "foo"}, {"B": "foo"}]}"#), "A"))
    }

    @Test("The planner picks the index whose columns the selector covers best, then the narrowest, then by name")
    func choosing() throws {
        let indexes = [MangoIndex.allDocuments, index("b", "ab", ["a", "b"]), index("a", "abc", ["a", "b", "c"]), index("c", "c", ["c"])]
        let twoFields = try QueryPlanner.plan(try normalized(#"{"a": 1, "b": {"$gt": 2}}"#), sort: [], useIndex: [], allowFallback: true, indexes: indexes)
        #expect(twoFields.index.name == "ab")
        #expect(twoFields.ranges.count == 2)
        let threeFields = try QueryPlanner.plan(try normalized(#"{"a": 1, "b": 2, "c": 3}"#), sort: [], useIndex: [], allowFallback: true, indexes: indexes)
        #expect(threeFields.index.name == "abc")
        let noneCovered = try QueryPlanner.plan(try normalized(#"{"z": 1}"#), sort: [], useIndex: [], allowFallback: true, indexes: indexes)
        #expect(noneCovered.index == .allDocuments, "an index is usable only when the selector requires each of its columns")
        let named = try QueryPlanner.plan(try normalized(#"{"a": 1, "b": 2, "c": 3}"#), sort: [], useIndex: ["b"], allowFallback: true, indexes: indexes)
        #expect(named.index.name == "ab")
        let ignored = try QueryPlanner.plan(try normalized(#"{"a": 1, "b": 2}"#), sort: [], useIndex: ["c"], allowFallback: true, indexes: indexes)
        #expect(ignored.index.name == "ab")
        #expect(ignored.ignoredUseIndex)
        #expect(throws: MangoError.self) {
            try QueryPlanner.plan(try normalized(#"{"a": 1, "b": 2}"#), sort: [], useIndex: ["c"], allowFallback: false, indexes: indexes)
        }
    }

    @Test("A sort needs an index whose columns start with it, after constant columns")
    func sorting() throws {
        let indexes = [MangoIndex.allDocuments, index("t", "type-year", ["type", "year"])]
        let sorted = try QueryPlanner.plan(try normalized(#"{"type": "book", "year": {"$gt": 0}}"#), sort: [.init("year")],
                                           useIndex: [], allowFallback: true, indexes: indexes)
        #expect(sorted.index.name == "type-year")
        #expect(throws: MangoError(error: "no_usable_index", reason: "No index exists for this sort, try indexing by the sort fields.")) {
            try QueryPlanner.plan(try normalized(#"{"type": {"$gt": "a"}, "year": {"$gt": 0}}"#), sort: [.init("year")],
                                  useIndex: [], allowFallback: true, indexes: indexes)
        }
        let byID = try QueryPlanner.plan(try normalized(#"{"_id": {"$gt": null}}"#), sort: [.init("_id", descending: true)],
                                         useIndex: [], allowFallback: true, indexes: indexes)
        #expect(byID.index == .allDocuments)
    }

    @Test("A partial index serves only a query that names it")
    func partial() throws {
        let partialIndex = index("p", "city", ["city"], partial: ["type": "contact"])
        let indexes = [MangoIndex.allDocuments, partialIndex]
        #expect(try QueryPlanner.plan(try normalized(#"{"city": "Oslo"}"#), sort: [], useIndex: [], allowFallback: true, indexes: indexes).index == .allDocuments)
        #expect(try QueryPlanner.plan(try normalized(#"{"city": "Oslo"}"#), sort: [], useIndex: ["p", "city"], allowFallback: true, indexes: indexes).index == partialIndex)
    }

    @Test("An array index serves $elemMatch on its path when the element's conditions require its expressions, and $in and $all without expressions")
    func arrayIndexes() throws {
        let tags = MangoIndex.array(designDocument: "_design/t", name: "tags", path: "tags", expressions: [])
        let phones = MangoIndex.array(designDocument: "_design/p", name: "phones", path: "contacts[].phones", expressions: ["type", "number"])
        func lookup(_ index: MangoIndex, _ selector: String) throws -> ArrayLookup? {
            ArrayLookup.of(index, in: try normalized(selector))
        }
        #expect(try lookup(tags, #"{"tags": {"$in": ["a", 1]}}"#) == ArrayLookup(keys: .anyOf(["a", 1]), operation: "$in"))
        #expect(try lookup(tags, #"{"tags": {"$all": ["a"]}, "n": 1}"#)?.keys == .allOf(["a"]))
        #expect(try lookup(tags, #"{"tags": {"$elemMatch": {"$gte": 3, "$lt": 9}}}"#)?.keys
                == .ranges([.range(low: .value(3), lowInclusive: true, high: .value(9), highInclusive: false)]))
        #expect(try lookup(tags, #"{"tags": {"$all": [["a"]]}}"#) == nil, "it also matches an array equal to its argument, which is no entry")
        #expect(try lookup(tags, #"{"tags": "a"}"#) == nil, "equality is on the whole array")
        #expect(try lookup(tags, #"{"$or": [{"tags": {"$in": ["a"]}}, {"n": 1}]}"#) == nil, "the condition must be required")
        #expect(try lookup(phones, #"{"contacts": {"$elemMatch": {"phones": {"$elemMatch": {"type": "home", "number": {"$gt": 5}}}}}}"#)?.keys
                == .ranges([.range(low: .value("home"), lowInclusive: true, high: .value("home"), highInclusive: true),
                            .range(low: .value(5), lowInclusive: false, high: .maximum, highInclusive: false)]))
        #expect(try lookup(phones, #"{"contacts": {"$elemMatch": {"phones": {"$elemMatch": {"type": "home"}}}}}"#) == nil,
                "an element without a number has no entry: number must be required too")
        #expect(try lookup(phones, #"{"contacts": {"$elemMatch": {"phones": {"$in": [1]}}}}"#) == nil, "$in needs an index of the elements themselves")
        #expect(try lookup(phones, #"{"contacts.phones": {"$elemMatch": {"type": "home", "number": 1}}}"#) == nil, "contacts.phones is no path into an array")

        let indexes = [MangoIndex.allDocuments, tags, index("n", "n", ["n"])]
        let served = try QueryPlanner.plan(try normalized(#"{"tags": {"$in": ["a"]}}"#), sort: [], useIndex: [], allowFallback: true, indexes: indexes)
        #expect(served.index == tags)
        #expect(served.arrayLookup?.operation == "$in")
        let json = try QueryPlanner.plan(try normalized(#"{"tags": {"$in": ["a"]}, "n": 1}"#), sort: [], useIndex: [], allowFallback: true, indexes: indexes)
        #expect(json.index.name == "n", "a usable JSON index first, as CouchDB prefers json indexes")
        let nothing = try QueryPlanner.plan(try normalized(#"{"tags": {"$in": []}}"#), sort: [], useIndex: [], allowFallback: true, indexes: indexes)
        #expect(nothing.index == tags)
        #expect(nothing.ranges == [.empty], "an empty $in matches nothing: nothing is read")
        let sorted = try QueryPlanner.plan(try normalized(#"{"tags": {"$in": ["a"]}, "_id": {"$gt": null}}"#), sort: [.init("_id")],
                                           useIndex: [], allowFallback: true, indexes: indexes)
        #expect(sorted.index == tags, "its documents are read in _id order")
        let byN = try QueryPlanner.plan(try normalized(#"{"tags": {"$in": ["a"]}, "n": {"$gt": 0}}"#), sort: [.init("n")],
                                        useIndex: [], allowFallback: true, indexes: indexes)
        #expect(byN.index.name == "n")
        #expect(byN.unusable.first { $0.index == tags }?.reasons == ["sort_order_mismatch"])
        let partial = MangoIndex.array(designDocument: "_design/q", name: "q", path: "tags", expressions: [], partialFilterSelector: ["n": 1])
        #expect(try QueryPlanner.plan(try normalized(#"{"tags": {"$in": ["a"]}}"#), sort: [], useIndex: [], allowFallback: true,
                                      indexes: [.allDocuments, partial]).index == .allDocuments, "a partial index serves only a query that names it")
        #expect(try QueryPlanner.plan(try normalized(#"{"tags": {"$in": ["a"]}}"#), sort: [], useIndex: ["q"], allowFallback: true,
                                      indexes: [.allDocuments, partial]).index == partial)
    }
}
