import Foundation
package import SetteeCore
import SetteeStorage

/// A query CouchDB's checks accepted, normalised for the engines that run it
/// (``ViewQueryRunner``, `_all_docs`): `reduce` decided, `key` and a view's
/// one-element `keys` turned into a start and end key, grouping resolved.
///
/// Made from the ``ViewQueryOptions`` a caller gave, by
/// `couch_mrview_util:validate_args/3` (then `check_range/2`) for a view and
/// `validate_all_docs_args/2` for `_all_docs`; errors carry CouchDB's messages.
package struct ValidatedViewQuery: Sendable {
    /// `keys` (reversed by the engines when descending); nil when not given.
    package let keys: [JSONValue]?
    /// The start and end keys (`key` gives both).
    package let startKey: JSONValue?
    package let endKey: JSONValue?
    /// nil: CouchDB's defaults, the lowest id first and the highest last in the scan's direction.
    package let startKeyDocID: String?
    package let endKeyDocID: String?
    package let inclusiveEnd: Bool
    package let descending: Bool
    package let limit: Int?
    package let skip: Int
    /// Whether the query reduces (always false for `_all_docs`).
    package let reduce: Bool
    package let grouping: ViewQueryOptions.Grouping
    package let includeDocs: Bool
    /// `conflicts=true`: included documents list their conflicts.
    package let conflicts: Bool
    package let updateSeq: Bool
    package let update: ViewQueryOptions.UpdateMode
    /// The same query as public options, as ``ViewQueryOptions/validated(viewHasReduce:compare:)`` returns it.
    package let options: ViewQueryOptions

    /// CouchDB's checks for a view query; see ``ViewQueryOptions/validated(viewHasReduce:compare:)``.
    package init(view given: ViewQueryOptions, viewHasReduce: Bool, compare: (JSONValue, JSONValue) -> Int) throws(QueryError) {
        if let failure = given.keyEncodingFailure { throw .badRequest(failure) }
        var options = given
        // A one-element `keys` never reaches #mrargs.keys for a view (parse_params/4,
        // treat_single_keys_as_key/1): it is `key`.
        if let keys = options.keys, keys.count == 1 {
            options.keys = nil
            if options.key == nil { options.key = keys[0] }
        }
        // set_view_type/3
        let isReduce = viewHasReduce && options.reduce != false
        try options.applyLimit()
        let level = try options.validateCommon(isReduce: isReduce)
        if options.partition != nil {
            throw .queryParse("`partition` parameter is not supported in this design doc")
        }
        options.normalise(isReduce: isReduce, level: level)
        try options.checkRange(compare: compare)
        self.init(normalised: options)
    }

    /// CouchDB's checks for `_all_docs`; see ``ViewQueryOptions/validatedForAllDocs()``.
    package init(allDocuments given: ViewQueryOptions) throws(QueryError) {
        if let failure = given.keyEncodingFailure { throw .badRequest(failure) }
        // chttpd_db: GET /db/_all_docs checks `keys` before anything else.
        if given.keysJSON != nil && given.keys == nil {
            throw .badRequest("`keys` parameter must be an array.")
        }
        var options = given
        let level = try options.validateCommon(isReduce: false)
        if options.partition != nil {
            throw .queryParse("`partition` parameter is not supported on this db")
        }
        try options.applyLimit()
        options.normalise(isReduce: false, level: level)
        self.init(normalised: options)
    }

    private init(normalised options: ViewQueryOptions) {
        keys = options.keys
        startKey = options.startKey
        endKey = options.endKey
        startKeyDocID = options.startKeyDocID
        endKeyDocID = options.endKeyDocID
        inclusiveEnd = options.inclusiveEnd
        descending = options.descending
        limit = options.limit
        skip = options.skip
        reduce = options.reduce ?? false
        grouping = options.grouping
        includeDocs = options.includeDocs
        conflicts = options.conflicts
        updateSeq = options.updateSeq
        update = options.update
        self.options = options
    }
}

/// The checks, in CouchDB's order, on the options as given.
extension ViewQueryOptions {
    /// `apply_limit/2` with the default `query_limit = infinity`.
    fileprivate func applyLimit() throws(QueryError) {
        if let limit, limit > Self.maximumLimit {
            throw .queryParse("Limit is too large, must not exceed \(Self.maximumLimit)")
        }
    }

    /// `validate_args_int/1`, in CouchDB's order. Returns the group level, `nil` for exact.
    fileprivate func validateCommon(isReduce: Bool) throws(QueryError) -> Int?? {
        // determine_group_level/1: .some(nil) is `exact`.
        let level: Int??
        switch (group, groupLevel) {
        case (nil, nil), (false?, nil):
            level = .some(0)
        case (false?, let given?) where given > 0:
            throw .queryParse("Can't specify group=false and group_level>0 at the same time")
        case (true?, nil):
            level = .some(nil)
        case (_, let given?):
            level = .some(given)
        }
        let isExact = level == .some(nil)

        if !isReduce && reduce == true {
            throw .queryParse("Reduce is invalid for map-only views.")
        }
        if isReduce && !isExact && keys != nil {
            throw .queryParse("Multi-key fetches for reduce views must use `group=true`")
        }
        if keysJSON != nil && keys == nil {
            throw .queryParse("`keys` must be an array of strings.")
        }
        if let keys, !keys.isEmpty {
            let start = startKey ?? key
            let end = endKey ?? key
            let compatible: Bool
            if keys.count == 1, let start, let end {
                compatible = Self.identical(start, keys[0]) && Self.identical(end, keys[0])
            } else {
                compatible = start == nil && end == nil
            }
            if !compatible {
                throw .queryParse("`keys` is incompatible with `key`, `start_key` and `end_key`")
            }
        }
        if let limit, limit < 0 {
            throw .queryParse("`limit` must be a positive integer.")
        }
        if skip < 0 {
            throw .queryParse("`skip` must be >= 0")
        }
        switch level {
        case .some(nil) where isReduce, .some(0?):
            break
        case .some(let given?) where isReduce && given >= 0:
            break
        default:
            if isReduce {
                throw .queryParse("`group_level` must be >= 0")
            }
            throw .queryParse("Invalid use of grouping on a map view.")
        }
        if isReduce && includeDocs {
            throw .queryParse("`include_docs` is invalid for reduce")
        }
        if isReduce && conflictsGiven != nil {
            throw .queryParse("`conflicts` is invalid for reduce views.")
        }
        return level
    }

    fileprivate mutating func normalise(isReduce: Bool, level: Int??) {
        reduce = isReduce
        if let key {
            if startKey == nil { startKey = key }
            if endKey == nil { endKey = key }
            self.key = nil
        }
        switch level {
        case .some(let given?):
            groupLevel = given
            group = given > 0
        default:
            groupLevel = nil
            group = true
        }
    }

    /// `check_range/2`: a range that cannot match any row is an error for views.
    fileprivate func checkRange(compare: (JSONValue, JSONValue) -> Int) throws(QueryError) {
        guard let startKey, let endKey, !Self.identical(startKey, endKey) else { return }
        let low: [UInt8] = []
        let high: [UInt8] = [0xFF]
        let startID = startKeyDocID.map { Array($0.utf8) } ?? (descending ? high : low)
        let endID = endKeyDocID.map { Array($0.utf8) } ?? (descending ? low : high)
        // couch_ejson_compare:less_json_ids/2
        let order = compare(startKey, endKey)
        let startIsLess = order == 0 ? startID.lexicographicallyPrecedes(endID) : order < 0
        if !descending && !startIsLess {
            throw .queryParse(
                "No rows can match your key range, reverse your start_key and end_key or set descending=true")
        }
        if descending && startIsLess {
            throw .queryParse(
                "No rows can match your key range, reverse your start_key and end_key or set descending=false")
        }
    }
}
