import SetteeCore
@_spi(LMDB) package import SetteeStorage

/// What to read of an index: its rows in a range of encoded keys, in either
/// direction, with or without their documents.
package struct IndexScan {
    package var range: IndexRange
    package var descending: Bool
    /// Whether each row comes with its document's JSON text.
    package var documents: Bool
    /// Whether to work out ``IndexEntry/indexIsCurrent`` (one more read per
    /// scan); false leaves it false.
    package var checksCurrency: Bool

    package init(range: IndexRange, descending: Bool = false, documents: Bool = false, checksCurrency: Bool = false) {
        self.range = range
        self.descending = descending
        self.documents = documents
        self.checksCurrency = checksCurrency
    }
}

/// One row of an index as an ``IndexEntryReader`` hands it over: it and its
/// document's text point into the read's memory, valid only during the call.
package struct IndexEntry {
    package let row: IndexRow
    /// The row's document as ``DocumentStore/liveJSON(_:conflicts:in:scratch:)``
    /// writes it, when the scan reads documents and the document exists, is not
    /// deleted and has not expired; nil otherwise.
    package let document: UnsafeRawBufferPointer?
    /// Whether the index reflects every write of the snapshot read (its rows'
    /// keys are the documents' current values), when the scan checks it.
    package let indexIsCurrent: Bool
}

/// Reads an index's rows in a range, each with its document, on one snapshot:
/// what `find` reads from its JSON indexes, without a view query's options,
/// counts and rows of strings: nothing is copied unless the caller keeps it.
package struct IndexEntryReader {
    package let store: DocumentStore
    package let indexes: ViewIndexStore
    /// For a partitioned view, the partition's ``PartitionKey/prefix(_:)``:
    /// the range is read within it. Nil for a view that is not partitioned.
    package var partitionPrefix: [UInt8]?

    package init(store: DocumentStore, indexes: ViewIndexStore, partitionPrefix: [UInt8]? = nil) {
        self.store = store
        self.indexes = indexes
        self.partitionPrefix = partitionPrefix
    }

    /// Hands `body` the rows of `view`'s index that `scan` asks for, in order,
    /// until it returns false. `conflicts`: documents name their live
    /// losing leaves (`_conflicts`). `requiringIndex`: as for
    /// ``ViewIndexStore/read(_:tables:requiringIndex:_:)``.
    package func read(_ view: ViewDefinition, _ scan: IndexScan, conflicts: Bool = false, tables: ViewIndexTables, requiringIndex: Bool,
                      _ body: (IndexEntry) throws -> Bool) throws {
        try indexes.read(view, tables: tables, requiringIndex: requiringIndex) { snapshot, tables, transaction in
            // No state in this snapshot, or a state with no rows (a new index whose
            // rows a merge of sorted runs is putting in): the index has no rows here.
            guard let snapshot, snapshot.state.rowCount > 0 else { return }
            let current = try scan.checksCurrency
                && indexes.currentSequence(view.signature, committed: snapshot.state.sequence) >= store.lastSequence(in: transaction)
            let range = partitionPrefix.map { PartitionKey.range(scan.range, within: $0) } ?? scan.range
            let scanner = IndexScanner(transaction: transaction, rows: tables.rows, chunks: nil)
            guard scan.documents else {
                try scanner.scan(range, descending: scan.descending) { try body(IndexEntry(row: $0, document: nil, indexIsCurrent: current)) }
                return
            }
            // Each document's text is written in one buffer, kept for the next.
            var json: [UInt8] = []
            var pages = MappedPagesRelease(store.environment)
            try scanner.scan(range, descending: scan.descending) { row in
                let found = try row.withID { try store.liveJSON($0, conflicts: conflicts, in: transaction, into: &json) }
                if found { pages.read(json.count) }
                guard found else { return try body(IndexEntry(row: row, document: nil, indexIsCurrent: current)) }
                return try json.withUnsafeBytes { try body(IndexEntry(row: row, document: $0, indexIsCurrent: current)) }
            }
        }
    }
}
