import Foundation
package import SetteeCore
import SetteeStorage

/// CouchDB 3.5's ranking reducers (`couch_query_servers.erl`):
/// `builtin_first_last/3` with `builtin_cmp_first/2` and `builtin_cmp_last/2`,
/// and `builtin_rank_n/4` with `rank_fun_top/2` and `rank_fun_bottom/2`.
///
/// Both compare with CouchDB's default collation (`couch_ejson_compare`),
/// whatever the view's own collation option.
package enum BuiltinRank {
    /// `less_json_ids`: keys by collation, then doc ids byte for byte. Returns -1, 0 or 1.
    private static func compare(_ key: JSONValue, _ id: String, _ otherKey: JSONValue, _ otherID: String) -> Int {
        let order = CollationKey.compare(key, otherKey, mode: .unicode)
        if order != 0 { return order }
        return JSONValue.compareBytes(id, otherID)
    }

    /// Whether a row (key, id) replaces the one kept so far: `_first` takes a
    /// strictly lower one, `_last` one that is not lower (so among equal rows,
    /// `_first` keeps the first seen and `_last` the last).
    private static func replaces(last: Bool, _ key: JSONValue, _ id: String, _ keptKey: JSONValue, _ keptID: String) -> Bool {
        let order = compare(key, id, keptKey, keptID)
        return last ? order >= 0 : order < 0
    }

    /// `[key, id, value]` of the first (or last) row; `[]` for no rows.
    package static func firstOrLast(last: Bool, keys: [JSONValue], ids: [String], values: [JSONValue]) -> JSONValue {
        guard !values.isEmpty else { return .array([]) }
        func id(_ index: Int) -> String { index < ids.count ? ids[index] : "" }
        var kept = 0
        for index in values.indices.dropFirst() where replaces(last: last, keys[index], id(index), keys[kept], id(kept)) {
            kept = index
        }
        return .array([keys[kept], .string(id(kept)), values[kept]])
    }

    /// Combines `[key, id, value]` partials.
    package static func rereduceFirstOrLast(last: Bool, _ partials: [JSONValue]) throws(BuiltinReduceFailure) -> JSONValue {
        var kept: (key: JSONValue, id: String, value: JSONValue)?
        for partial in partials {
            guard case .array(let triple) = partial else { throw functionClause(partial) }
            // An empty group's `[]` has nothing to offer.
            if triple.isEmpty { continue }
            guard triple.count == 3, case .string(let id) = triple[1] else { throw functionClause(partial) }
            if let current = kept, !replaces(last: last, triple[0], id, current.key, current.id) { continue }
            kept = (triple[0], id, triple[2])
        }
        guard let kept else { return .array([]) }
        return .array([kept.key, .string(kept.id), kept.value])
    }

    /// The `n` highest (`descending`) or lowest values, without two that
    /// collate equal (`lists:umerge/3` keeps the one it had first).
    package static func ranked(_ values: [JSONValue], n: Int, descending: Bool) -> JSONValue {
        var ranked: [JSONValue] = []
        ranked.reserveCapacity(min(n, values.count) + 1)
        for value in values { insert(value, into: &ranked, n: n, descending: descending) }
        return .array(ranked)
    }

    /// Merges ranked lists (partials) into one of at most `n` values.
    package static func rereduceRanked(_ partials: [JSONValue], n: Int, descending: Bool) throws(BuiltinReduceFailure) -> JSONValue {
        var ranked: [JSONValue] = []
        for partial in partials {
            guard case .array(let values) = partial else { throw functionClause(partial) }
            for value in values { insert(value, into: &ranked, n: n, descending: descending) }
        }
        return .array(ranked)
    }

    private static func insert(_ value: JSONValue, into ranked: inout [JSONValue], n: Int, descending: Bool) {
        // The first position whose value comes after `value` in rank order.
        var low = 0
        var high = ranked.count
        while low < high {
            let middle = (low + high) / 2
            var order = CollationKey.compare(ranked[middle], value, mode: .unicode)
            if descending { order = -order }
            if order == 0 { return }  // an equal value is already ranked
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        guard low < n else { return }
        ranked.insert(value, at: low)
        if ranked.count > n { ranked.removeLast() }
    }

    /// CouchDB's reducer has no clause for such a partial.
    private static func functionClause(_ partial: JSONValue) -> BuiltinReduceFailure {
        BuiltinReduceFailure(error: "function_clause", reason: "not a partial reduction of this reducer: \(partial.jsonText)")
    }
}
