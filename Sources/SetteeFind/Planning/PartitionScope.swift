package import SetteeCore

/// Which indexes and documents a `find` query may read in a partitioned
/// database (`mango_idx:filter_partition_indexes/2`): a partition query
/// reads the partitioned indexes and the partition's documents only, a
/// global query the global indexes; `_all_docs` serves both.
///
/// A partitioned index holds the same rows as a global one: a partition
/// query reads it in the key range its selector allows and keeps the rows
/// of the partition's documents, and reads `_all_docs` from `partition:` to
/// `partition;` only.
package struct PartitionScope: Sendable {
    /// Whether the database is partitioned (`explain`'s `partitioned`).
    package var databaseIsPartitioned: Bool
    /// The partition queried; nil for a global query.
    package var partition: String?

    package init(databaseIsPartitioned: Bool, partition: String?) {
        self.databaseIsPartitioned = databaseIsPartitioned
        self.partition = partition
    }

    /// Whether the query may use `index`: `_all_docs` always; a partitioned
    /// index only for a partition query, a global one only for a global query.
    package func includes(_ index: MangoIndex) -> Bool {
        index.type == "special" || (index.partitioned ?? databaseIsPartitioned) == (partition != nil)
    }

    /// The indexes in scope, in their order.
    package func indexes(_ indexes: [MangoIndex]) -> [MangoIndex] {
        indexes.filter(includes)
    }

    /// The selector the documents are matched with: for a partition query,
    /// `selector` and an id that begins with `partition:`.
    package func selector(_ selector: JSONValue) -> JSONValue {
        guard let partition else { return selector }
        let inPartition: JSONValue = ["_id": ["$beginsWith": .string(partition + ":")]]
        // `{}` matches every document; within `$and` it would match none.
        if case .object(let members) = selector, members.isEmpty { return inPartition }
        return ["$and": [selector, inPartition]]
    }

    /// `QueryPlanner/plan` over the indexes in scope, with CouchDB's words
    /// for a sort no index in scope serves (`mango_idx:mango_sort_error/2`).
    package func plan(_ selector: JSONValue, sort: [FindRequest.SortField], useIndex: [String], allowFallback: Bool,
                      indexes: [MangoIndex]) throws(MangoError) -> QueryPlanner.Plan {
        let plan: QueryPlanner.Plan
        do {
            plan = try QueryPlanner.plan(selector, sort: sort, useIndex: useIndex, allowFallback: allowFallback,
                                         indexes: self.indexes(indexes))
        } catch where error.error == "no_usable_index" && databaseIsPartitioned {
            throw MangoError(error: "no_usable_index", reason: partition != nil
                ? "No partitioned index exists for this sort, try indexing by the sort fields."
                : "No global index exists for this sort, try indexing by the sort fields.")
        }
        return readingPartitionInByteOrder(plan)
    }

    /// `plan` with `_all_docs` read to the partition's last id: `$beginsWith`'s upper bound is
    /// `partition:` and U+FFFF in collation order; in the byte order `_all_docs` is read in,
    /// the partition's ids end before `partition;`.
    package func readingPartitionInByteOrder(_ plan: QueryPlanner.Plan) -> QueryPlanner.Plan {
        var plan = plan
        if let partition, plan.index.type == "special",
           case .range(let low, let lowInclusive, .value(.string(let high)), _)? = plan.ranges.first, high == partition + ":\u{FFFF}" {
            plan.ranges[0] = .range(low: low, lowInclusive: lowInclusive, high: .value(.string(partition + ";")), highInclusive: false)
        }
        return plan
    }

    /// A request's `partition` (`mango_opts:validate_partition/1`): `""` for none.
    /// - Throws: `illegal_partition` as `couch_partition:validate_partition/1` words it.
    package static func partition(_ value: JSONValue) throws(MangoError) -> String? {
        guard case .string(let partition) = value else {
            throw MangoError(error: "illegal_partition", reason: "Partition must be a string")
        }
        if partition.isEmpty { return nil }
        if partition.utf8.first == UInt8(ascii: "_") {
            throw MangoError(error: "illegal_partition", reason: "Partition must not start with an underscore")
        }
        if partition.utf8.contains(UInt8(ascii: ":")) {
            throw MangoError(error: "illegal_partition", reason: "Partition must not contain a colon")
        }
        return partition
    }
}

extension MangoIndex {
    /// The index with ``partitioned`` said: the design document's option, else `databaseDefault`.
    package func resolvingPartitioned(default databaseDefault: Bool) -> MangoIndex {
        guard type != "special", partitioned == nil else { return self }
        var index = self
        index.partitioned = databaseDefault
        return index
    }
}
