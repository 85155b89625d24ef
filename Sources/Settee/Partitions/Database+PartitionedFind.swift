import Foundation
import SetteeCore
import SetteeFind
import SetteeStorage
import SetteeViews

/// `find` in a partitioned database: partition queries and partitioned indexes.
extension Database {
    /// The finder for `request`, told whether the database is partitioned.
    /// - Throws: `query_parse_error` for a partition query of a database that
    ///   is not partitioned, as CouchDB refuses it.
    func finder(for request: FindRequest) throws -> Finder {
        var finder = Finder(store: try store)
        finder.databaseIsPartitioned = try isPartitioned()
        if request.partition != nil, !finder.databaseIsPartitioned {
            throw MangoError(error: "query_parse_error", reason: "`partition` parameter is not supported on this db")
        }
        return finder
    }

    /// Refuses a partitioned index in a database that is not partitioned
    /// (`couch_mrview:validate/2`) before its design document is read.
    func checkPartitioned(_ index: MangoIndex) throws {
        if index.partitioned == true, try !isPartitioned() {
            throw PartitionError(error: "invalid_design_doc", reason: "partitioned option cannot be true in a non-partitioned database.")
        }
    }

    /// A query design document's members with an index's `partitioned`
    /// option (`mango_idx:set_ddoc_partitioned/2`): a new design document takes
    /// the option the request gave; an existing one must already have it.
    /// - Throws: `invalid_partitioned_option` when the existing design document's option differs.
    static func settingPartitioned(of index: MangoIndex, in members: [(key: String, value: JSONValue)],
                                   isNew: Bool) throws -> [(key: String, value: JSONValue)] {
        let options = members.first(where: { $0.key == "options" })?.value
        let current = options?["partitioned"]?.boolValue
        if index.partitioned == current { return members }
        guard isNew else {
            throw MangoError(error: "invalid_partitioned_option",
                             reason: "Requested partitioned option does not match existing value on design document \(index.designDocument ?? "")")
        }
        guard let partitioned = index.partitioned else { return members }
        var members = members
        var optionMembers = options?.objectValue ?? []
        optionMembers.removeAll { $0.key == "partitioned" }
        optionMembers.append(("partitioned", .bool(partitioned)))
        members.removeAll { $0.key == "options" }
        members.append(("options", .object(optionMembers)))
        return members
    }
}

/// Views in a partitioned database: those of its design documents are
/// partitioned unless `options.partitioned` is false (CouchDB's partitioned
/// views), keep their rows by partition, and are queried one partition at a time.
extension Database {
    /// A view query of `view` as it runs: a partition query of a partitioned
    /// view reads the partition's rows only (the partition's key prefix
    /// returned, `PartitionKey`), its `limit` within the partition query
    /// limit; a view that is not partitioned refuses `partition` as before.
    /// - Throws: `query_parse_error` for a global query of a partitioned view
    ///   (`couch_mrview_util:validate_args/2`), or a `limit` over the limit.
    func partitionQuery(_ options: ViewQueryOptions, view: ViewDefinition) throws -> (options: ViewQueryOptions, partitionPrefix: [UInt8]?) {
        guard view.partitioned else { return (options, nil) }
        var options = options
        try applyPartitionQueryLimit(&options)
        let prefix = try partitionPrefix(of: view, partition: options.partition)
        options.partition = nil
        return (options, prefix)
    }

    /// The key prefix of `partition`'s rows in `view` when it is partitioned
    /// (``PartitionKey/prefix(_:)``); nil for a view that is not.
    /// - Throws: `query_parse_error` for a global query of a partitioned view.
    func partitionPrefix(of view: ViewDefinition, partition: String?) throws -> [UInt8]? {
        guard view.partitioned else { return nil }
        guard let partition else { throw QueryError.queryParse("`partition` parameter is mandatory for queries to this view.") }
        return PartitionKey.prefix(partition)
    }

    /// `couch_mrview_util:apply_limit/2` for a partitioned view or `_all_docs`
    /// of a partition: no `limit` is the partition query limit, a larger one refused.
    func applyPartitionQueryLimit(_ options: inout ViewQueryOptions) throws {
        guard let maximum = self.options.partitionQueryLimit else { return }
        guard let limit = options.limit else {
            options.limit = maximum
            return
        }
        if limit > maximum { throw QueryError.queryParse("Limit is too large, must not exceed \(maximum)") }
    }
}

/// `_all_docs` of one partition.
extension Database {
    /// An `_all_docs` query as it runs: with a ``ViewQueryOptions/partition``
    /// in a partitioned database, kept within the partition's ids,
    /// `partition:` to `partition;` (`couch_mrview_util:apply_all_docs_partition/2`):
    /// the start and end keys asked for where they lie within, else the
    /// partition's; `key` and `keys` are left as asked. In a database that is
    /// not partitioned the partition is left for validation to refuse.
    func partitionAllDocuments(_ options: ViewQueryOptions) throws -> ViewQueryOptions {
        guard let partition = options.partition, try isPartitioned() else { return options }
        var options = options
        options.partition = nil
        try applyPartitionQueryLimit(&options)
        guard options.key == nil, options.keys == nil else { return options }
        let (first, last) = Partition.idRange(partition)
        func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
        let start = options.startKey?.stringValue, end = options.endKey?.stringValue
        if options.descending {
            options.startKey = .string(start.map { precedes($0, last) ? $0 : last } ?? last)
            options.endKey = .string(end.map { precedes(first, $0) ? $0 : first } ?? first)
        } else {
            options.startKey = .string(start.map { precedes(first, $0) ? $0 : first } ?? first)
            options.endKey = .string(end.map { precedes($0, last) ? $0 : last } ?? last)
        }
        return options
    }
}
