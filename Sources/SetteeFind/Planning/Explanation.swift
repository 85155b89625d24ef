import SetteeCore
import SetteeViews

/// `explain`: how `find` would run a request, in the shape of CouchDB's
/// `_explain` response (`mango_cursor:explain/1`): the index chosen, the
/// normalized selector, the options, the key range read (`mrargs`), whether
/// the index covers the fields asked for, every other index with why it was
/// not chosen (`index_candidates`), and which fields an index could serve
/// (`selector_hints`).
enum Explanation {
    static func explain(_ request: FindRequest, plan: QueryPlanner.Plan, selector: JSONValue, indexes: [MangoIndex],
                        databaseName: String, scope: PartitionScope = PartitionScope(databaseIsPartitioned: false, partition: nil)) -> JSONValue {
        let fields: JSONValue = .array(request.fields.map(JSONValue.string))
        let covering = covers(plan.index, request: request, selector: selector)
        return .object([
            ("dbname", .string(databaseName)),
            ("index", plan.index.json),
            ("partitioned", .bool(scope.databaseIsPartitioned)),
            ("selector", selector),
            ("opts", options(request)),
            ("limit", .number(Double(request.limit))),
            ("skip", .number(Double(request.skip))),
            ("fields", fields),
            ("index_candidates", .array(candidates(request, plan: plan, selector: selector, indexes: indexes, scope: scope))),
            ("selector_hints", [[
                "type": "json",
                "indexable_fields": .array(QueryPlanner.indexableFields(selector).map(JSONValue.string)),
                "unindexable_fields": .array(unindexableFields(selector).map(JSONValue.string)),
            ]]),
            ("mrargs", mrargs(request, plan: plan, covering: covering)),
            ("covering", plan.index.type == "json" ? .bool(covering) : false),
        ])
    }

    /// The request's options as `mango_opts:validate_find/1` returns them.
    private static func options(_ request: FindRequest) -> JSONValue {
        .object([
            ("use_index", .array(request.useIndex.map(JSONValue.string))),
            ("bookmark", .string(request.bookmark ?? "nil")),
            ("limit", .number(Double(request.limit))),
            ("skip", .number(Double(request.skip))),
            ("sort", .object(request.sort.map { ($0.field, .string($0.descending ? "desc" : "asc")) })),
            ("fields", .array(request.fields.map(JSONValue.string))),
            ("partition", .string(request.partition ?? "")),
            ("r", .number(Double(request.r))),
            ("conflicts", .bool(request.conflicts)),
            // As the request gave them (mango_opts:validate_find/1); mrargs has what they mean together.
            ("stale", request.stale ? "ok" : false),
            ("update", .bool(request.update)),
            ("stable", .bool(request.stable)),
            ("execution_stats", .bool(request.executionStats)),
            ("allow_fallback", .bool(request.allowFallback)),
        ])
    }

    /// `mango_idx_view:covers/2`: the fields asked for and the selector's are all in the index's key (or `_id`).
    static func covers(_ index: MangoIndex, request: FindRequest, selector: JSONValue) -> Bool {
        guard index.type == "json", !request.fields.isEmpty else { return false }
        let available = Set(["_id"] + index.fields.map(\.field))
        return Set(request.fields + selectorFields(selector)).isSubset(of: available)
    }

    /// `mango_selector:fields/1`.
    private static func selectorFields(_ selector: JSONValue) -> [String] {
        guard case .object(let members) = selector, members.count == 1 else { return [] }
        let (key, argument) = members[0]
        if key.hasPrefix("$"), case .array(let elements) = argument { return elements.flatMap(selectorFields) }
        return [key]
    }

    private static func unindexableFields(_ selector: JSONValue) -> [String] {
        let indexable = Set(QueryPlanner.indexableFields(selector))
        return Set(selectorFields(selector)).subtracting(indexable).sorted { JSONValue.compareBytes($0, $1) < 0 }
    }

    /// The view query the plan runs (`mango_cursor_view:explain/1`).
    private static func mrargs(_ request: FindRequest, plan: QueryPlanner.Plan, covering: Bool) -> JSONValue {
        var start: JSONValue
        var end: JSONValue
        var keys: JSONValue?
        if plan.index.type == "array", plan.ranges != [.empty], let lookup = plan.arrayLookup {
            // The entries the array index reads: a key range, or keys one by one ($in, $all).
            switch lookup.keys {
            case .ranges(let ranges):
                (start, end) = keyRange(ranges)
            case .anyOf(let values), .allOf(let values):
                start = .null
                end = .null
                keys = .array(values.map { .array([$0]) })
            }
        } else if plan.ranges == [.empty] {
            start = .null
            end = .null
        } else if plan.index.type == "special" {
            // _all_docs: from the _id range, else from null to the highest id.
            start = .null
            end = "<MAX>"
            if case .range(let low, _, let high, _)? = plan.ranges.first {
                if case .value(let value) = low { start = value }
                if case .value(let value) = high { end = value }
            }
        } else {
            (start, end) = keyRange(plan.ranges)
        }
        let descending = request.sort.first?.descending ?? false
        // An array index's entries are read forwards whichever the order: its documents are sorted after.
        let backwards = descending && plan.index.type != "array"
        if backwards { swap(&start, &end) }
        var members: [(key: String, value: JSONValue)] = [
            ("include_docs", .bool(!covering)),
            ("view_type", "map"),
            ("reduce", false),
            ("partition", request.partition.map(JSONValue.string) ?? .null),
            ("start_key", start),
            ("end_key", end),
            ("direction", backwards ? "rev" : "fwd"),
            ("stable", .bool(request.readsStable)),
            ("update", .bool(request.updatesIndex)),
            ("conflicts", request.conflicts ? true : "undefined"),
        ]
        if let keys { members.append(("keys", keys)) }
        if plan.index.type == "array", let lookup = plan.arrayLookup {
            // Settee's own: what the array index serves, and that documents are read once each, in _id order.
            members.append(("array", ["path": .string(plan.index.arrayPath ?? ""), "operator": .string(lookup.operation),
                                      "combine": lookup.keys.isAllOf ? "intersection" : "union",
                                      "order": descending ? "_id desc" : "_id"]))
        }
        return .object(members)
    }

    /// The start and end keys of the leading columns' ranges (`<MAX>` past the end).
    private static func keyRange(_ ranges: [FieldRange]) -> (start: JSONValue, end: JSONValue) {
        var startKey: [JSONValue] = []
        for range in ranges {
            guard case .range(.value(let low), _, _, _) = range else { break }
            startKey.append(low)
        }
        var endKey: [JSONValue] = []
        for range in ranges {
            guard case .range(_, _, .value(let high), _) = range else { break }
            endKey.append(high)
        }
        endKey.append("<MAX>")
        return (.array(startKey), .array(endKey))
    }

    /// Every index but the one chosen, with why (`mango_cursor:extract_candidate_indexes/1`).
    private static func candidates(_ request: FindRequest, plan: QueryPlanner.Plan, selector: JSONValue,
                                   indexes: [MangoIndex], scope: PartitionScope) -> [JSONValue] {
        let ranked = plan.ranked
        let partial = indexes.filter { $0.partialFilterSelector != nil && !QueryPlanner.matches($0, request.useIndex) }
        let outOfScope = indexes.filter { !scope.includes($0) && !partial.contains($0) }
        let unusable = plan.unusable
        let usable = indexes.filter { index in !partial.contains(index) && !outOfScope.contains(index) && !unusable.contains { $0.index == index } }
        let excluded = request.useIndex.isEmpty || plan.ignoredUseIndex ? [] : usable.filter { !QueryPlanner.matches($0, request.useIndex) }
        let unfavored = usable.filter { index in !excluded.contains(index) && !ranked.contains { $0.index == index } }
        // Ranks, as CouchDB numbers its groups: the unfavoured after the ranked ones, then each group after the last.
        let unfavoredRank = max(1, ranked.count)
        let excludedRank = unfavoredRank + (unfavored.isEmpty ? 0 : 1)
        let unusableRank = excludedRank + (excluded.isEmpty ? 0 : 1)
        let outOfScopeRank = unusableRank + (unusable.isEmpty ? 0 : 1)
        let partialRank = outOfScopeRank + (outOfScope.isEmpty ? 0 : 1)
        let winnerColumns = plan.index.fields.count
        var entries: [(index: MangoIndex, usable: Bool, reason: String, ranking: Int)] = []
        for index in partial { entries.append((index, false, "is_partial", partialRank)) }
        for index in outOfScope { entries.append((index, false, "scope_mismatch", outOfScopeRank)) }
        for (index, reasons) in unusable { entries.append((index, false, reasons.first ?? "field_mismatch", unusableRank)) }
        for index in excluded { entries.append((index, true, "excluded_by_user", excludedRank)) }
        for index in unfavored { entries.append((index, true, "unfavored_type", unfavoredRank)) }
        for (position, candidate) in ranked.enumerated() where position > 0 {
            let reason = candidate.unusedRanges > 0 ? "less_overlap"
                : candidate.index.fields.count > winnerColumns ? "too_many_fields" : "alphabetically_comes_after"
            entries.append((candidate.index, true, reason, position))
        }
        // Listed as CouchDB's map of indexes folds them: the last in (design document, name) order first.
        entries.sort { a, b in
            let design = JSONValue.compareBytes(a.index.designDocument ?? "", b.index.designDocument ?? "")
            if (a.index.designDocument == nil) != (b.index.designDocument == nil) { return a.index.designDocument != nil }
            return design != 0 ? design > 0 : JSONValue.compareBytes(a.index.name, b.index.name) > 0
        }
        return entries.map { entry in
            let covering: JSONValue = entry.index.type == "json" ? .bool(covers(entry.index, request: request, selector: selector)) : .null
            return [
                "index": entry.index.json,
                "analysis": .object([
                    ("usable", .bool(entry.usable)),
                    ("reasons", [["name": .string(entry.reason)]]),
                    ("ranking", .number(Double(entry.ranking))),
                    ("covering", covering),
                ]),
            ]
        }
    }
}
