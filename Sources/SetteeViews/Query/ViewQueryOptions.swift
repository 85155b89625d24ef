import Foundation
public import SetteeCore
import SetteeStorage

/// CouchDB's view query parameters (`#mrargs` in `couch_mrview.hrl`): what a
/// query asks for, as given.
///
/// Build one from a query string with ``init(parameters:)``, or set the
/// properties directly, then call ``validated(viewHasReduce:compare:)`` (a view)
/// or ``validatedForAllDocs()`` (`_all_docs`) for CouchDB's checks and the
/// normalised options a query engine should run.
///
/// Parsing (`ViewQueryOptions+Parsing.swift`) follows `couch_mrview_http:parse_params/4`
/// and `parse_param/4`; validation (`ValidatedViewQuery.swift`) follows
/// `couch_mrview_util:validate_args/3`, `validate_all_docs_args/2`, `apply_limit/2` and
/// `check_range/2`. Errors carry CouchDB's messages word for word.
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
    public var keys: [JSONValue]? {
        get {
            guard case .array(let elements)? = keysJSON else { return nil }
            return elements
        }
        set { keysJSON = newValue.map { .array($0) } }
    }
    /// `keys` as given: an array, or, from a query string, another JSON value, which
    /// validation refuses as CouchDB does (``keys`` is nil then).
    package var keysJSON: JSONValue?
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
    /// rejected on a reduce view; any assignment counts as given.
    public var conflicts: Bool {
        get { conflictsGiven ?? false }
        set { conflictsGiven = newValue }
    }
    /// `conflicts` as given; nil when not given (CouchDB's `conflicts = undefined`).
    package var conflictsGiven: Bool?
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
    /// `partition`: in a partitioned database, the partition a query of a
    /// partitioned view or of `_all_docs` reads; validation refuses it
    /// elsewhere, as CouchDB does.
    public var partition: String?
    /// Why a key given as an `Encodable` value did not encode; validation
    /// refuses the options with it.
    package var keyEncodingFailure: String?

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


    /// How `group` and `group_level` combine (CouchDB's `determine_group_level/1`), without
    /// its error: `group=false&group_level>0` reads as that level here.
    public var grouping: Grouping {
        switch (group, groupLevel) {
        case (true, nil): return .exact
        case (_, nil): return .none
        case (_, let level?): return level == 0 ? .none : .level(level)
        }
    }

    // MARK: - Validation

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
        try ValidatedViewQuery(view: self, viewHasReduce: viewHasReduce, compare: compare).options
    }

    /// CouchDB's checks for `_all_docs` (`couch_mrview_util:validate_all_docs_args/2`), which
    /// validates it as a map view: `reduce=true` and `group=true` are rejected, and there is no
    /// key-range check (a reversed range simply matches nothing).
    ///
    /// Normalised as in ``validated(viewHasReduce:compare:)``, except that a one-element `keys`
    /// stays `keys`. CouchDB's `_all_docs` uses `startKeyDocID`/`endKeyDocID` as the start/end id
    /// when `startKey`/`endKey` are absent (`all_docs_key_opts/2`).
    public func validatedForAllDocs() throws(QueryError) -> ViewQueryOptions {
        try ValidatedViewQuery(allDocuments: self).options
    }

    // MARK: - Equality of terms

    /// Erlang's exact term equality (`=:=`) on decoded JSON, as CouchDB's pattern matches use
    /// it: strings and member names compare by bytes, object members in order.
    package static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null):
            return true
        case let (.bool(x), .bool(y)):
            return x == y
        case let (.number(x, _), .number(y, _)):
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
}
