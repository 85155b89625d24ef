import Foundation
import SetteeCore
import SetteeStorage

/// CouchDB's view query parameters (`#mrargs` in `couch_mrview.hrl`).
///
/// Build one from a query string with ``init(parameters:)``, or set the
/// properties directly, then call ``validated(viewHasReduce:compare:)`` (a view)
/// or ``validatedForAllDocs()`` (`_all_docs`) for CouchDB's checks and the
/// normalised options a query engine should run.
///
/// Parsing follows `couch_mrview_http:parse_params/4` and `parse_param/4`;
/// validation follows `couch_mrview_util:validate_args/3`, `validate_all_docs_args/2`,
/// `apply_limit/2` and `check_range/2`. Errors carry CouchDB's messages word for word.
public struct ViewQueryOptions: Sendable, Equatable {
    /// `update=true|false|lazy`. `stale=ok` means `update=false&stable=true`,
    /// `stale=update_after` means `update=lazy&stable=true`.
    public enum UpdateMode: String, Sendable {
        case `true`, `false`, lazy
    }

    /// How rows of a reduce view are grouped, as CouchDB's `determine_group_level/1` resolves it.
    public enum Grouping: Sendable, Equatable {
        /// One row reducing every selected key (`group_level` 0).
        case none
        /// One row per distinct key (`group=true` without `group_level`).
        case exact
        /// One row per distinct prefix of this many array elements (`group_level=N`, N > 0).
        case level(Int)
    }

    /// `?MAX_VIEW_LIMIT` (2^59 - 1): the largest `limit` CouchDB accepts with its default
    /// `[query_server_config] query_limit = infinity`.
    public static let maximumLimit = 0x7FF_FFFF_FFFF_FFFF

    /// `key`. Parsing keeps it here; validation turns it into `startKey`/`endKey`
    /// (a later `startkey`/`endkey` parameter still wins, as in CouchDB) and clears it.
    public var key: JSONValue?
    /// `keys`. For views a one-element `keys` means the same as `key` and validation
    /// turns it into one; `_all_docs` keeps it (a missing id then yields an error row).
    public var keys: [JSONValue]?
    /// `startkey` / `start_key`.
    public var startKey: JSONValue?
    /// `endkey` / `end_key`.
    public var endKey: JSONValue?
    /// `startkey_docid` / `start_key_doc_id`. `nil` means CouchDB's default: the lowest id
    /// (`<<>>`) ascending, the highest (`<<255>>`) descending.
    public var startKeyDocID: String?
    /// `endkey_docid` / `end_key_doc_id`. `nil` means CouchDB's default: the highest id
    /// (`<<255>>`) ascending, the lowest (`<<>>`) descending.
    public var endKeyDocID: String?
    /// `inclusive_end`.
    public var inclusiveEnd = true
    /// `descending`.
    public var descending = false
    /// `limit`; `nil` for no limit.
    public var limit: Int?
    /// `skip`.
    public var skip = 0
    /// `group`; `nil` when not given.
    public var group: Bool?
    /// `group_level`; `nil` when not given.
    public var groupLevel: Int?
    /// `reduce`; `nil` when not given (then: reduce if the view has a reduce function).
    public var reduce: Bool?
    /// `include_docs`.
    public var includeDocs = false
    /// `conflicts`. CouchDB's default is "not given", and even `conflicts=false` is
    /// rejected on a reduce view; any assignment after `init()` counts as given.
    public var conflicts = false {
        didSet { conflictsGiven = true }
    }
    /// `attachments=true` (with `include_docs`). `attachments=false` never clears it, as in CouchDB.
    public var attachments = false
    /// `att_encoding_info=true` (with `include_docs`). `att_encoding_info=false` never clears it.
    public var attEncodingInfo = false
    /// `update_seq`.
    public var updateSeq = false
    /// `update` (or `stale`).
    public var update: UpdateMode = .true
    /// `stable` (or `stale`).
    public var stable = false
    /// `sorted`.
    public var sorted = true
    /// `partition`. Settee has no partitioned databases, so validation rejects it as
    /// CouchDB does for a non-partitioned database.
    public var partition: String?

    /// Whether `conflicts` was given (CouchDB's `conflicts = undefined` otherwise).
    package var conflictsGiven = false
    /// The last `keys` value that was not a one-element array was not an array at all
    /// (views: "`keys` must be an array of strings.").
    package var keysNotArray = false
    /// The first `keys` value was not an array (`_all_docs`: "`keys` parameter must be an array.").
    package var firstKeysNotArray = false

    public init() {}

    /// Options set from Swift, each under its CouchDB meaning; keys are
    /// ``JSONValue``s, so literals work:
    ///
    /// ```swift
    /// ViewQueryOptions(startKey: "D", limit: 10)
    /// ViewQueryOptions(startKey: ["ann"], endKey: ["ann", [:]], reduce: false)
    /// ViewQueryOptions(groupLevel: 1)
    /// ```
    public init(key: JSONValue? = nil, keys: [JSONValue]? = nil, startKey: JSONValue? = nil, endKey: JSONValue? = nil,
                inclusiveEnd: Bool = true, descending: Bool = false, limit: Int? = nil, skip: Int = 0,
                reduce: Bool? = nil, group: Bool? = nil, groupLevel: Int? = nil, includeDocs: Bool = false,
                update: UpdateMode = .true) {
        self.key = key
        self.keys = keys
        self.startKey = startKey
        self.endKey = endKey
        self.inclusiveEnd = inclusiveEnd
        self.descending = descending
        self.limit = limit
        self.skip = skip
        self.reduce = reduce
        self.group = group
        self.groupLevel = groupLevel
        self.includeDocs = includeDocs
        self.update = update
    }

    // MARK: - Parsing

    /// Parses CouchDB query-string parameters, in order: name → raw text exactly as in a URL
    /// query after percent-decoding (keys as JSON: `"a"`, `[1,2]`; booleans `true`/`false`,
    /// any letter case; integers).
    ///
    /// Accepts every name CouchDB accepts, aliases included (`startkey`/`start_key`,
    /// `endkey`/`end_key`, `startkey_docid`/`start_key_doc_id`, `endkey_docid`/`end_key_doc_id`,
    /// `stale`); an empty name and names CouchDB does not know (`callback` included) are ignored.
    /// Repeated parameters apply in order, the later winning, as in CouchDB.
    ///
    /// - Throws: ``QueryError`` with CouchDB's error and reason, e.g.
    ///   `query_parse_error: Invalid boolean parameter: "yes"` or
    ///   `bad_request: invalid UTF-8 JSON`.
    public init(parameters: [(name: String, value: String)]) throws(QueryError) {
        self.init()
        // CouchDB decodes the first `keys` (chttpd:qs_json_value/3) before the other parameters.
        let firstKeysIndex = parameters.firstIndex { $0.name == "keys" }
        var firstKeys: JSONValue?
        if let firstKeysIndex {
            firstKeys = try Self.parseJSON(parameters[firstKeysIndex].value)
        }
        for (index, parameter) in parameters.enumerated() {
            let value = parameter.value
            switch parameter.name {
            case "":
                continue
            case "reduce":
                reduce = try Self.parseBoolean(value)
            case "key":
                setKey(try Self.parseJSON(value))
            case "keys":
                let isFirst = index == firstKeysIndex
                let decoded = isFirst ? firstKeys! : try Self.parseJSON(value)
                switch decoded {
                case .array(let elements) where elements.count == 1:
                    setKey(elements[0])
                    if isFirst { keys = elements }
                case .array(let elements):
                    keys = elements
                    keysNotArray = false
                default:
                    keys = nil
                    keysNotArray = true
                    if isFirst { firstKeysNotArray = true }
                }
            case "startkey", "start_key":
                startKey = try Self.parseJSON(value)
            case "endkey", "end_key":
                endKey = try Self.parseJSON(value)
            case "startkey_docid", "start_key_doc_id":
                startKeyDocID = value
            case "endkey_docid", "end_key_doc_id":
                endKeyDocID = value
            case "limit":
                limit = try Self.parsePositiveInteger(value)
            case "stale":
                switch value {
                case "ok":
                    stable = true
                    update = .false
                case "update_after":
                    stable = true
                    update = .lazy
                default:
                    throw .queryParse("Invalid value for `stale`.")
                }
            case "stable":
                switch value {
                case "true": stable = true
                case "false": stable = false
                default: throw .queryParse("Invalid value for `stable`.")
                }
            case "update":
                guard let mode = UpdateMode(rawValue: value) else {
                    throw .queryParse("Invalid value for `update`.")
                }
                update = mode
            case "descending":
                descending = try Self.parseBoolean(value)
            case "skip":
                skip = try Self.parsePositiveInteger(value)
            case "group":
                group = try Self.parseBoolean(value)
            case "group_level":
                groupLevel = try Self.parsePositiveInteger(value)
            case "inclusive_end":
                inclusiveEnd = try Self.parseBoolean(value)
            case "include_docs":
                includeDocs = try Self.parseBoolean(value)
            case "attachments":
                if try Self.parseBoolean(value) { attachments = true }
            case "att_encoding_info":
                if try Self.parseBoolean(value) { attEncodingInfo = true }
            case "update_seq":
                updateSeq = try Self.parseBoolean(value)
            case "conflicts":
                conflicts = try Self.parseBoolean(value)
                conflictsGiven = true  // observers do not run inside an initializer
            case "sorted":
                sorted = try Self.parseBoolean(value)
            case "partition":
                try Self.validatePartition(value)
                partition = value
            default:
                continue
            }
        }
    }

    /// `key=K` (or a one-element `keys`): CouchDB sets both ends of the range to K,
    /// replacing any `startkey`/`endkey` given before it.
    private mutating func setKey(_ value: JSONValue) {
        key = value
        startKey = nil
        endKey = nil
    }

    // MARK: - Validation

    /// How `group` and `group_level` combine (CouchDB's `determine_group_level/1`), without
    /// its error: `group=false&group_level>0` reads as that level here.
    public var grouping: Grouping {
        switch (group, groupLevel) {
        case (true, nil): return .exact
        case (_, nil): return .none
        case (_, let level?): return level == 0 ? .none : .level(level)
        }
    }

    /// CouchDB's checks for a view query (`couch_mrview_util:validate_args/3`, then
    /// `check_range/2` as `get_view/4` runs it), and the normalised options.
    ///
    /// - Parameters:
    ///   - viewHasReduce: whether the view has a reduce function. `reduce=false` on such a
    ///     view queries it as a map view, as CouchDB's `set_view_type/3` does.
    ///   - compare: the view's key collation (-1, 0 or 1). CouchDB compares the start and end
    ///     of the range as `{key, docid}` pairs: keys first, then, when they collate equal,
    ///     doc ids by raw bytes (with the default ids `<<>>` and `<<255>>`).
    /// - Returns: the options with `reduce` filled in; `key` and a one-element `keys` turned
    ///   into `startKey`/`endKey`; `group`/`groupLevel` resolved (exact grouping is
    ///   `group == true, groupLevel == nil`, otherwise `groupLevel` is the level, 0 for none,
    ///   and `group` says whether it is above 0). Doc ids stay `nil` for CouchDB's defaults.
    public func validated(
        viewHasReduce: Bool,
        compare: (JSONValue, JSONValue) -> Int
    ) throws(QueryError) -> ViewQueryOptions {
        var options = self
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
        return options
    }

    /// CouchDB's checks for `_all_docs` (`couch_mrview_util:validate_all_docs_args/2`), which
    /// validates it as a map view: `reduce=true` and `group=true` are rejected, and there is no
    /// key-range check (a reversed range simply matches nothing).
    ///
    /// Normalised as in ``validated(viewHasReduce:compare:)``, except that a one-element `keys`
    /// stays `keys`. CouchDB's `_all_docs` uses `startKeyDocID`/`endKeyDocID` as the start/end id
    /// when `startKey`/`endKey` are absent (`all_docs_key_opts/2`).
    public func validatedForAllDocs() throws(QueryError) -> ViewQueryOptions {
        // chttpd_db: GET /db/_all_docs checks the first `keys` before anything else.
        if firstKeysNotArray {
            throw .badRequest("`keys` parameter must be an array.")
        }
        var options = self
        let level = try options.validateCommon(isReduce: false)
        if options.partition != nil {
            throw .queryParse("`partition` parameter is not supported on this db")
        }
        try options.applyLimit()
        options.normalise(isReduce: false, level: level)
        return options
    }

    /// `apply_limit/2` with the default `query_limit = infinity`.
    private func applyLimit() throws(QueryError) {
        if let limit, limit > Self.maximumLimit {
            throw .queryParse("Limit is too large, must not exceed \(Self.maximumLimit)")
        }
    }

    /// `validate_args_int/1`, in CouchDB's order. Returns the group level, `nil` for exact.
    private func validateCommon(isReduce: Bool) throws(QueryError) -> Int?? {
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
        if keysNotArray {
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
        if isReduce && conflictsGiven {
            throw .queryParse("`conflicts` is invalid for reduce views.")
        }
        return level
    }

    private mutating func normalise(isReduce: Bool, level: Int??) {
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
    private func checkRange(compare: (JSONValue, JSONValue) -> Int) throws(QueryError) {
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

    // MARK: - Values

    /// `parse_boolean/1`: `true`/`false` in any letter case.
    package static func parseBoolean(_ text: String) throws(QueryError) -> Bool {
        let lowered = String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        switch lowered {
        case "true": return true
        case "false": return false
        default:
            throw .queryParse(erlangFormat("Invalid boolean parameter: ", text))
        }
    }

    /// `parse_int/1`: Erlang's `list_to_integer/1` (an optional sign, then decimal digits).
    /// Values beyond `Int` saturate, so a huge `limit` still fails the limit check.
    package static func parseInteger(_ text: String) throws(QueryError) -> Int {
        let bytes = Array(text.utf8)
        var index = 0
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            index = 1
        }
        let digits = bytes[index...]
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .queryParse(erlangFormat("Invalid value for integer: ", text))
        }
        var magnitude = 0
        var overflow = false
        for digit in digits where !overflow {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int(digit - 0x30))
            overflow = o1 || o2
            magnitude = sum
        }
        if overflow { return negative ? Int.min : Int.max }
        return negative ? -magnitude : magnitude
    }

    /// `parse_pos_int/1`: an integer >= 0.
    package static func parsePositiveInteger(_ text: String) throws(QueryError) -> Int {
        let value = try parseInteger(text)
        guard value >= 0 else {
            throw .queryParse(erlangFormat("Invalid value for positive integer: ", text))
        }
        return value
    }

    /// `?JSON_DECODE` (jiffy with `dedupe_keys`); any failure is chttpd's
    /// `{bad_request, "invalid UTF-8 JSON"}`.
    package static func parseJSON(_ text: String) throws(QueryError) -> JSONValue {
        do {
            return dedupeKeys(try JSONParser.parse(text))
        } catch {
            throw .badRequest("invalid UTF-8 JSON")
        }
    }

    /// jiffy's `dedupe_keys`: of repeated object member names only the last member stays,
    /// in its own place. Names compare by bytes.
    package static func dedupeKeys(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let elements):
            return .array(elements.map(dedupeKeys))
        case .object(let members):
            var seen = Set<[UInt8]>()
            var kept: [(key: String, value: JSONValue)] = []
            for member in members.reversed() where seen.insert(Array(member.key.utf8)).inserted {
                kept.append((member.key, dedupeKeys(member.value)))
            }
            return .object(kept.reversed())
        default:
            return value
        }
    }

    /// `couch_partition:validate_partition/1`, as `parse_param/4` runs it.
    package static func validatePartition(_ partition: String) throws(QueryError) {
        if partition.isEmpty {
            throw QueryError(error: "illegal_partition", reason: "Partition must not be empty")
        }
        if partition.utf8.first == UInt8(ascii: "_") {
            throw QueryError(error: "illegal_partition", reason: "Partition must not start with an underscore")
        }
        if partition.utf8.contains(UInt8(ascii: ":")) {
            throw QueryError(error: "illegal_partition", reason: "Partition must not contain a colon")
        }
    }

    /// Erlang's exact term equality (`=:=`) on decoded JSON, as CouchDB's pattern matches use
    /// it: strings and member names compare by bytes, object members in order.
    package static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null):
            return true
        case let (.bool(x), .bool(y)):
            return x == y
        case let (.number(x), .number(y)):
            return x == y
        case let (.string(x), .string(y)):
            return sameBytes(x, y)
        case let (.array(x), .array(y)):
            return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case let (.object(x), .object(y)):
            return x.count == y.count
                && zip(x, y).allSatisfy { sameBytes($0.key, $1.key) && identical($0.value, $1.value) }
        default:
            return false
        }
    }

    /// Whether two strings hold the same UTF-8 bytes (`==` compares canonical equivalence).
    private static func sameBytes(_ x: String, _ y: String) -> Bool {
        guard x.utf8.count == y.utf8.count else { return false }
        let compared = x.utf8.withContiguousStorageIfAvailable { x in
            y.utf8.withContiguousStorageIfAvailable { y in x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
        return (compared ?? nil) ?? x.utf8.elementsEqual(y.utf8)
    }

    // MARK: - Erlang's ~p

    /// `io_lib:format(Prefix ++ "~p", [Value])` for a query-string value, which CouchDB holds
    /// as a list of bytes: a quoted string when every byte is printable Latin-1, otherwise a
    /// list of integers, wrapped as `io_lib_pretty` wraps it at 80 columns.
    package static func erlangFormat(_ prefix: String, _ value: String) -> String {
        prefix + erlangPrint(Array(value.utf8), column: prefix.utf8.count + 1)
    }

    /// `io_lib_pretty:print/2` of a flat list of bytes starting at 1-based `column`.
    package static func erlangPrint(_ bytes: [UInt8], column: Int) -> String {
        String(decoding: ErlangFormat.print(.list(bytes.map { .integer(Double($0)) }), column: column), as: UTF8.self)
    }
}
