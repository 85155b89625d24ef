import Foundation
package import SetteeCore
package import SetteeStorage

/// Answers a query on an up-to-date index: range scans for map queries,
/// grouping and reduction for reduce queries, documents for include_docs.
package struct ViewQueryRunner {
    package let store: DocumentStore
    package let indexes: ViewIndexStore
    package let workers: any FunctionWorkers

    /// Rows per call of a JavaScript reduce function before results are rereduced.
    package var reduceChunk = 1000
    /// Whether counts and reductions read stored chunks (when current) instead of walking every row.
    package var storedReductions = true
    /// For a partition query of a partitioned view, the partition's
    /// ``PartitionKey/prefix(_:)``: only its rows are read, and keys are
    /// grouped without it. Nil for a view that is not partitioned.
    package var partitionPrefix: [UInt8]?

    package init(store: DocumentStore, indexes: ViewIndexStore, workers: any FunctionWorkers) {
        self.store = store
        self.indexes = indexes
        self.workers = workers
    }

    /// The query's result. With `requiringIndex` (the index was just brought
    /// up to date, so it has a state), an index with no state was removed
    /// since by another process: ``IndexRemovedError``, not an empty result.
    package func run(_ view: ViewDefinition, _ options: ValidatedViewQuery, tables: ViewIndexTables, requiringIndex: Bool = false) throws -> ViewResult {
        try ViewResult.collected { header, row in
            try run(view, options, tables: tables, requiringIndex: requiringIndex, streaming: false, header: header, row: row)
        }
    }

    /// Reads the result in one snapshot, handing over its header, then each
    /// row as it is read. `streaming`: the header comes before the first row
    /// (a map query counts its offset first); otherwise it may come after them,
    /// where one walk both counts the offset and reaches the rows.
    /// `requiringIndex`: as for ``run(_:_:tables:requiringIndex:)``.
    package func run(_ view: ViewDefinition, _ options: ValidatedViewQuery, tables: ViewIndexTables, requiringIndex: Bool = false, streaming: Bool,
             header: (ViewResultHeader) throws -> Void, row: (consuming ViewRow) throws -> Void) throws {
        try indexes.read(view, tables: tables, requiringIndex: requiringIndex) { snapshot, tables, transaction in
            try run(view, options, snapshot: snapshot, tables: tables, transaction: transaction, streaming: streaming, header: header, row: row)
        }
    }

    /// The query on one snapshot of the index (see ``ViewIndexStore/read(_:tables:requiringIndex:_:)``).
    private func run(_ view: ViewDefinition, _ options: ValidatedViewQuery, snapshot: IndexSnapshot?, tables: ViewIndexTables,
                     transaction: LMDBTransaction, streaming: Bool,
                     header: (ViewResultHeader) throws -> Void, row: (consuming ViewRow) throws -> Void) throws {
        let state = snapshot?.state ?? ViewIndexState(designDocument: view.designDocument, view: view.name)
        // No state in this snapshot: the index has no rows here, and its tables are
        // not read (a removal may have closed the handles: see ViewIndexStore.drop).
        // Nor are they when the state says no rows: a new index whose rows a merge
        // of sorted runs is putting in has none yet (see ViewIndexer+Spill).
        let readsTables = snapshot != nil && state.rowCount > 0
        let scanner = IndexScanner(transaction: transaction, rows: readsTables ? tables.rows : nil,
                                   chunks: readsTables && storedReductions && state.chunksCurrent ? tables.chunks : nil)
        let updateSequence = options.updateSeq ? indexes.currentSequence(view.signature, committed: state.sequence) : nil
        if options.reduce, let reduce = view.reduce {
            try header(ViewResultHeader(totalRows: nil, offset: nil, updateSequence: updateSequence))
            try reduceQuery(view, reduce: reduce, options, scanner: scanner, row: row)
        } else {
            // Kept for the index state once it has served a few queries.
            let counts = scanner.chunks == nil ? nil : try snapshot?.chunkCounts {
                try ChunkCounts(chunks: tables.chunks, in: transaction)
            }
            try mapQuery(view, options, scanner: scanner, counts: counts, transaction: transaction, streaming: streaming,
                         header: { offset in
                             // fabric_view_map: the offset plus skip, at most total_rows.
                             try header(ViewResultHeader(totalRows: state.rowCount, offset: offset.map { min($0, state.rowCount) },
                                                         updateSequence: updateSequence))
                         }, row: row)
        }
    }

    // MARK: Ranges

    /// The ranges to scan, in the order to scan them: one per key of `keys`
    /// (reversed when descending, as `fabric_view_map:go/8` reverses them), each
    /// bounded by the doc ids and `inclusive_end` as a `startkey`…`endkey` range
    /// of that key is (`couch_mrview_util:key_opts/2`); otherwise the one range.
    package func ranges(_ options: ValidatedViewQuery, collation: CollationMode) -> [IndexRange] {
        let ranges = keyRanges(options, collation: collation)
        guard let partitionPrefix else { return ranges }
        return ranges.map { PartitionKey.range($0, within: partitionPrefix) }
    }

    /// ``ranges(_:collation:)`` over the collation keys alone.
    private func keyRanges(_ options: ValidatedViewQuery, collation: CollationMode) -> [IndexRange] {
        if let keys = options.keys {
            let ordered = options.descending ? Array(keys.reversed()) : keys
            return ordered.map { key in
                let encoded = CollationKey.encode(key, mode: collation)
                return range(start: encoded, end: encoded, options)
            }
        }
        let encodedStart = options.startKey.map { CollationKey.encode($0, mode: collation) }
        // `key` arrives as the same start and end key: encoded once.
        let sameKey = if let startKey = options.startKey, let endKey = options.endKey { ViewQueryOptions.identical(startKey, endKey) } else { false }
        let encodedEnd = sameKey ? encodedStart : options.endKey.map { CollationKey.encode($0, mode: collation) }
        return [range(start: encodedStart, end: encodedEnd, options)]
    }

    /// The range from the encoded start key to the encoded end key (nil: open), with the
    /// options' doc ids, direction and `inclusive_end`.
    private func range(start encodedStart: [UInt8]?, end encodedEnd: [UInt8]?, _ options: ValidatedViewQuery) -> IndexRange {
        IndexRange.keys(from: encodedStart, docID: options.startKeyDocID, to: encodedEnd, docID: options.endKeyDocID,
                        descending: options.descending, inclusiveEnd: options.inclusiveEnd)
    }

    // MARK: Map queries

    /// A map query's rows, after (`streaming`: before) its offset.
    private func mapQuery(_ view: ViewDefinition, _ options: ValidatedViewQuery, scanner: IndexScanner, counts: ChunkCounts?,
                          transaction: LMDBTransaction, streaming: Bool,
                          header: (_ offset: Int?) throws -> Void, row emit: (consuming ViewRow) throws -> Void) throws {
        let ranges = ranges(options, collation: view.collation)
        let limit = options.limit ?? .max
        // The rows still to skip and those taken, and the map's pages read (rows and
        // documents: see ``MappedPagesRelease``), handed to `take` rather than captured
        // by it: captured, they were boxed and each access checked at run time.
        var progress = (skip: options.skip, taken: 0, pages: MappedPagesRelease(store.environment))
        // Neither the options nor the transaction are captured by `take`: copying them for each row costs.
        // Each document's text is made in one buffer, kept for the next.
        var scratch: [UInt8] = []
        let document: ((IndexRow) throws -> String)? = options.includeDocs ? {
            try includedDocument(for: $0, transaction: transaction, conflicts: options.conflicts, scratch: &scratch)
        } : nil
        // Takes a row of the result; false once `limit` rows are taken.
        func take(_ row: IndexRow, _ progress: inout (skip: Int, taken: Int, pages: MappedPagesRelease)) throws -> Bool {
            progress.pages.read(row.storedKey.count + row.value.count)
            if progress.skip > 0 {
                progress.skip -= 1
                return true
            }
            let documentJSON = try document?(row)
            if let documentJSON { progress.pages.read(documentJSON.utf8.count) }
            // Handed over, not copied: a copy would retain and release each of its strings.
            try emit(ViewRow(
                id: row.id,
                keyJSON: String(decoding: row.keyJSON, as: UTF8.self),
                valueJSON: String(decoding: row.valueJSON, as: UTF8.self),
                documentJSON: documentJSON))
            progress.taken += 1
            return progress.taken < limit
        }
        if !streaming, !options.descending, ranges.count == 1, let lower = ranges[0].lower, let counts, let chunks = scanner.chunks {
            // The kept boundaries count the rows up to the last level-1 chunk below
            // the range; one walk from there counts the rest and reaches the range.
            let start = try counts.lastChunk(below: .below(lower), chunks: chunks, in: transaction)
            let passed = try scanner.scan(ranges[0], countingAfter: start?.boundary) { row in limit > 0 ? try take(row, &progress) : false }
            try header((start?.rows ?? 0) + passed + options.skip)
            return
        }
        // CouchDB's offset is the position of the first row its folds reach (before
        // skipping), or, when no key of `keys` has rows, of the last key's range
        // (couch_mrview:map_fold/3 and /5): the ranges before the first with rows are empty.
        var first = 0
        if ranges.count > 1 {
            first = ranges.count - 1
            for (index, range) in ranges.enumerated().dropLast() {
                var found = false
                try scanner.scan(range, descending: options.descending) { _ in
                    found = true
                    return false
                }
                if found {
                    first = index
                    break
                }
            }
        }
        try header(try rowsBefore(ranges.isEmpty ? nil : ranges[first], descending: options.descending, scanner: scanner, counts: counts) + options.skip)
        guard limit > 0 else { return }
        // Descending, one document's rows under one key still come in value order, as CouchDB
        // expands them (couch_mrview_util:fold/4, expand_dups/2): each such run is handed over
        // reversed. Its rows point into the memory map; the array's room is reused.
        var run: [IndexRow] = []
        func handOverRun(_ run: inout [IndexRow], _ progress: inout (skip: Int, taken: Int, pages: MappedPagesRelease)) throws -> Bool {
            defer { run.removeAll(keepingCapacity: true) }
            for row in run.reversed() where try !take(row, &progress) { return false }
            return true
        }
        for range in ranges[first...] {
            var more = true
            try scanner.scan(range, descending: options.descending) { row in
                guard options.descending else {
                    more = try take(row, &progress)
                    return more
                }
                if let last = run.last, !Self.sameKeyAndDocument(last, row) {
                    more = try handOverRun(&run, &progress)
                    if !more { return false }
                }
                run.append(row)
                return true
            }
            if more && !run.isEmpty { more = try handOverRun(&run, &progress) }
            if !more { break }
        }
    }

    /// Whether two rows are one document's under one key: their full keys differ at most in the emit index.
    private static func sameKeyAndDocument(_ a: IndexRow, _ b: IndexRow) -> Bool {
        let (x, y) = (a.fullKey, b.fullKey)
        return x.count == y.count && memcmp(x.baseAddress!, y.baseAddress!, x.count - 4) == 0
    }

    /// Rows that sort before the range in the scan's direction.
    private func rowsBefore(_ range: IndexRange?, descending: Bool, scanner: IndexScanner, counts: ChunkCounts?) throws -> Int {
        guard let range else { return 0 }
        var count = 0
        let before: IndexRange
        var start: (boundary: [UInt8], height: Int)?
        if descending {
            guard let upper = range.upper else { return 0 }
            before = IndexRange(lower: IndexBound(bytes: upper.bytes, inclusive: !upper.inclusive), upper: nil)
        } else {
            guard let lower = range.lower else { return 0 }
            before = .below(lower)
            if let chunks = scanner.chunks, let (boundary, rows) = try counts?.lastChunk(below: before, chunks: chunks, in: scanner.transaction) {
                // The kept boundaries count the rows up to the last level-1 chunk before the range: rows follow.
                count = rows
                start = (boundary, 0)
            }
        }
        try scanner.fold(before, descending: descending, chunksWhere: { _ in true }, after: start) { item in
            switch item {
            case .row: count += 1
            case .chunk(let chunk, _): count += chunk.rowCount
            }
            return true
        }
        return count
    }

    /// The emitting document, or the one named by a value `{"_id": …}` (CouchDB's linked documents).
    private func includedDocument(for row: IndexRow, transaction: LMDBTransaction, conflicts: Bool, scratch: inout [UInt8]) throws -> String {
        var id = row.id
        if row.valueJSON.first == UInt8(ascii: "{"), let value = try? JSONParser.parse(row.valueJSON), case .string(let linked)? = value["_id"] {
            id = linked
            // `{"_id", "_rev"}`: that revision, a leaf or an earlier one kept (CouchDB's `load_doc` of `{Id, Rev}`).
            if case .string(let text)? = value["_rev"], let revision = Revision(text),
               try store.liveRevision(id, in: transaction) != revision {
                return try store.revision(id, revision: revision, in: transaction).map { String(decoding: $0.jsonBytes, as: UTF8.self) } ?? "null"
            }
        }
        return try store.liveJSON(id, conflicts: conflicts, in: transaction, scratch: &scratch) ?? "null"
    }

    // MARK: Reduce queries

    private func reduceQuery(_ view: ViewDefinition, reduce: String, _ options: ValidatedViewQuery, scanner: IndexScanner,
                             row emit: (consuming ViewRow) throws -> Void) throws {
        let grouping = options.grouping
        let reducer = try Reducer(source: reduce, view: view, workers: workers, chunk: reduceChunk, logger: store.logger)
        var taken = 0
        var skip = options.skip
        let limit = options.limit ?? .max
        var groupKey: [UInt8]?
        var groupKeyJSON = "null"
        var accumulator = reducer.makeAccumulator()
        var done = limit == 0

        func flush() throws {
            guard accumulator.rowCount > 0 else { return }
            let value = try reducer.finish(&accumulator)
            accumulator = reducer.makeAccumulator()
            if skip > 0 {
                skip -= 1
                return
            }
            if let overflow = Reducer.overflowReason(value) {
                try emit(ViewRow(id: nil, keyJSON: groupKeyJSON, valueJSON: "null", error: "reduce_overflow_error", reason: overflow))
            } else {
                try emit(ViewRow(id: nil, keyJSON: groupKeyJSON, valueJSON: value))
            }
            taken += 1
            done = taken >= limit
        }

        // A partitioned view's keys are grouped without their partition (the
        // range holds one partition's rows: chunks inside it hold no other's).
        let partitioned = partitionPrefix != nil
        func groupedKey(_ encodedKey: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            partitioned ? PartitionKey.strip(encodedKey) : encodedKey
        }
        // Whole stored chunks stand in for their rows where they lie inside one group.
        let acceptChunk: (StoredChunk) -> Bool = { chunk in
            guard chunk.reduction != nil else { return false }
            switch grouping {
            case .none: return true
            case .exact: return chunk.firstEncodedKey.elementsEqual(chunk.lastEncodedKey)
            case .level(let level):
                return CollationKey.prefix(ofEncodedArray: groupedKey(chunk.firstEncodedKey), level: level)
                    == CollationKey.prefix(ofEncodedArray: groupedKey(chunk.lastEncodedKey), level: level)
            }
        }

        /// Starts a new group when `encodedKey` is not in the current one.
        func enterGroup(_ encodedKey: UnsafeRawBufferPointer, keyJSON: () throws -> UnsafeRawBufferPointer) throws {
            let encodedKey = groupedKey(encodedKey)
            switch grouping {
            case .none:
                break
            case .exact:
                if groupKey == nil || compareBytes(encodedKey, groupKey!) != 0 {
                    try flush()
                    if done { return }
                    groupKey = Array(encodedKey)
                    groupKeyJSON = String(decoding: try keyJSON(), as: UTF8.self)
                }
            case .level(let level):
                let prefix = CollationKey.prefix(ofEncodedArray: encodedKey, level: level)
                if groupKey == nil || groupKey! != prefix {
                    try flush()
                    if done { return }
                    groupKey = prefix
                    groupKeyJSON = Self.truncatedKeyJSON(try keyJSON(), level: level)
                }
            }
        }

        for range in ranges(options, collation: view.collation) where !done {
            // The stored key of the last row or chunk handed over (in the memory map): an ascending
            // fold's next chunk begins after it.
            var previous: UnsafeRawBufferPointer?
            try scanner.fold(range, descending: options.descending, chunksWhere: acceptChunk) { item in
                switch item {
                case .row(let row):
                    try enterGroup(row.encodedKey) { row.keyJSON }
                    if done { return false }
                    try reducer.add(row: row, to: &accumulator)
                    previous = row.storedKey
                case .chunk(let chunk, let boundary):
                    if let error = chunk.reductionError() { throw error }
                    // A group's key is the first the fold reaches in it (couch_btree:reduce_stream_kv_node2/8):
                    // descending, the chunk's last row; ascending, its first.
                    try enterGroup(chunk.firstEncodedKey) {
                        let first = options.descending ? try scanner.lastRow(ofChunk: boundary) : try scanner.firstRow(after: previous, in: range)
                        guard let first else { throw StorageError.damaged("reading a stored chunk's first row") }
                        return first.keyJSON
                    }
                    if done { return false }
                    try reducer.add(partial: chunk.reduction!, rows: chunk.rowCount, to: &accumulator)
                    previous = boundary
                }
                return true
            }
            // Each key of `keys` is folded on its own (couch_mrview:red_fold/4): its groups end with it.
            if options.keys != nil, !done {
                try flush()
                groupKey = nil
            }
        }
        // An empty range gives no rows, as in CouchDB (not a null reduction).
        if !done { try flush() }
    }

    /// An array key cut to its first `level` elements; other keys unchanged.
    package static func truncatedKeyJSON(_ keyJSON: UnsafeRawBufferPointer, level: Int) -> String {
        guard keyJSON.first == UInt8(ascii: "["), case .array(let elements)? = try? JSONParser.parse(keyJSON) else {
            return String(decoding: keyJSON, as: UTF8.self)
        }
        return JSONValue.array(Array(elements.prefix(level))).jsonText
    }
}
