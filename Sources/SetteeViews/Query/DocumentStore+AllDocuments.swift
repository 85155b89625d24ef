import SetteeCore
@_spi(LMDB) package import SetteeStorage
extension DocumentStore {
    /// The stored `_design/` documents (live ones).
    package func designDocumentRecords() throws -> [Document] {
        try environment.read { try designDocumentRecords(in: $0) }
    }

    /// The live design documents as `transaction` sees them.
    package func designDocumentRecords(in transaction: LMDBTransaction) throws -> [Document] {
        var documents: [Document] = []
        try transaction.withCursor(docs) { cursor in
            let prefix = Array("_design/".utf8)
            var entry = try prefix.withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
            while let (key, value) = entry, key.starts(with: prefix) {
                let record = try DocumentRecord(bytes: value, id: key, path: environment.path)
                if !record.isDeleted { documents.append(record.document(id: String(decoding: key, as: UTF8.self))) }
                entry = try cursor.next()
            }
        }
        return documents
    }

    /// CouchDB's `_all_docs` over the `docs` table: ids in raw byte order,
    /// deleted documents left out. The header comes before the first row;
    /// rows are handed over one by one, in one read transaction.
    ///
    /// `total_rows` is the kept count of live documents. The offset, the live
    /// documents before the start key, is counted by reading the records
    /// before it in the query's direction: CouchDB's B-tree keeps a count in
    /// every node and finds it in one descent; LMDB keeps none, so a query
    /// that starts far into the ids costs that walk, and one without a start
    /// key none.
    package func forEachDocumentRow(_ options: ValidatedViewQuery, header: (ViewResultHeader) throws -> Void,
                            row emit: (consuming ViewRow) throws -> Void) throws {
        try environment.read { transaction in
            let updateSequence = options.updateSeq ? try lastSequence(in: transaction) : nil
            var skip = options.skip
            let limit = options.limit ?? .max
            var taken = 0

            /// Hands over a row unless it is skipped; false once `limit` rows are taken.
            func take(_ row: @autoclosure () throws -> ViewRow) throws -> Bool {
                guard taken < limit else { return false }
                if skip > 0 {
                    skip -= 1
                    return true
                }
                try emit(try row())
                taken += 1
                return taken < limit
            }

            var scratch: [UInt8] = []
            var pages = MappedPagesRelease(environment)
            func live(_ id: UnsafeRawBufferPointer, _ record: DocumentRecord) throws -> ViewRow {
                pages.read(id.count + record.bytes.count)
                let text = String(decoding: id, as: UTF8.self)
                var document: String?
                if options.includeDocs {
                    scratch.removeAll(keepingCapacity: true)
                    record.appendFullJSON(id: id, into: &scratch)
                    // conflicts=true: `_conflicts`, as CouchDB's couch_mrview loads the document with the option `conflicts`.
                    if options.conflicts { try appendConflicts(of: record, key: id, to: &scratch, deleted: false, in: transaction) }
                    document = String(decoding: scratch, as: UTF8.self)
                }
                return ViewRow(id: text, keyJSON: JSONValue.string(text).jsonText, valueJSON: #"{"rev":"\#(record.revision)"}"#,
                               documentJSON: document)
            }

            if let keys = options.keys {
                // One row per requested key, in the order given (reversed when descending); CouchDB
                // reports missing and deleted ones too, and no offset (fabric_view_all_docs:go/5).
                try header(ViewResultHeader(totalRows: try counts(in: transaction).live, offset: nil, updateSequence: updateSequence,
                                            writesNullOffset: true))
                for key in options.descending ? Array(keys.reversed()) : keys {
                    guard case .string(let id) = key else {
                        if try !take(ViewRow(id: nil, keyJSON: key.jsonText, valueJSON: "null", error: "not_found")) { return }
                        continue
                    }
                    var bytes = id
                    let more = try bytes.withUTF8 { idBytes in
                        guard let value = try transaction.get(docs, UnsafeRawBufferPointer(idBytes)) else {
                            return try take(ViewRow(id: nil, keyJSON: key.jsonText, valueJSON: "null", error: "not_found"))
                        }
                        let record = try DocumentRecord(bytes: value, id: idBytes, path: environment.path)
                        if record.isDeleted {
                            return try take(ViewRow(id: id, keyJSON: key.jsonText, valueJSON: #"{"rev":"\#(record.revision)","deleted":true}"#,
                                                    documentJSON: options.includeDocs ? "null" : nil))
                        }
                        return try take(try live(UnsafeRawBufferPointer(idBytes), record))
                    }
                    if !more { return }
                }
                return
            }

            // couch_mrview_util:all_docs_key_opts/2: the start and end keys, else the start and end doc
            // ids, bound the ids. A bound that is not a string sorts before every id in the id B-tree
            // (Erlang's term order puts binaries last): the lowest bound there is.
            // nil: no bound; .some(nil): below every id; .some(id): that id.
            func bound(_ key: JSONValue?, _ docID: String?) -> [UInt8]?? {
                guard let key else { return docID.map { .some(Array($0.utf8)) } }
                guard case .string(let id) = key else { return .some(nil) }
                return .some(Array(id.utf8))
            }
            let startBound = bound(options.startKey, options.startKeyDocID)
            let endBound = bound(options.endKey, options.endKeyDocID)
            // Below every id where the scan begins (ascending) or ends (descending): no bound there.
            let start: [UInt8]? = startBound.flatMap { $0 }
            let end: [UInt8]? = endBound.flatMap { $0 }
            // Below every id where the scan begins (descending) or ends (ascending): nothing matches.
            let matchesNothing = options.descending ? startBound == .some(nil) : endBound == .some(nil)
            /// Whether `key` comes before the start key in the scan's direction.
            func beforeStart(_ key: UnsafeRawBufferPointer) -> Bool {
                if options.descending && startBound == .some(nil) { return true }
                guard let start else { return false }
                return options.descending ? compareBytes(key, start) > 0 : compareBytes(key, start) < 0
            }
            // First the header: the kept count, and the live documents before the start key.
            let total = try counts(in: transaction).live
            var offset = 0
            if options.descending && startBound == .some(nil) {
                offset = total
            } else if start != nil {
                try transaction.withCursor(docs) { cursor in
                    var entry = options.descending ? try cursor.last() : try cursor.first()
                    while let (key, value) = entry, beforeStart(key) {
                        if try !DocumentRecord(bytes: value, id: key, path: environment.path).isDeleted { offset += 1 }
                        entry = options.descending ? try cursor.previous() : try cursor.next()
                    }
                }
            }
            // fabric_view_all_docs: the offset plus skip, at most total_rows.
            try header(ViewResultHeader(totalRows: total, offset: min(total, offset + options.skip), updateSequence: updateSequence))
            guard limit > 0, !matchesNothing else { return }
            // Then the rows, from the start key to the end key.
            try transaction.withCursor(docs) { cursor in
                var entry: LMDBCursor.Entry?
                if let start {
                    entry = try cursor.seek(atOrAfter: start)
                    if options.descending {
                        // The last id at or before the start key.
                        if entry == nil { entry = try cursor.last() } else if let (key, _) = entry, compareBytes(key, start) > 0 { entry = try cursor.previous() }
                    }
                } else {
                    entry = options.descending ? try cursor.last() : try cursor.first()
                }
                while let (key, value) = entry {
                    if let end {
                        let order = compareBytes(key, end)
                        let past = options.descending ? (order < 0 || (order == 0 && !options.inclusiveEnd)) : (order > 0 || (order == 0 && !options.inclusiveEnd))
                        if past { return }
                    }
                    let record = try DocumentRecord(bytes: value, id: key, path: environment.path)
                    if !record.isDeleted, try !take(try live(key, record)) { return }
                    entry = options.descending ? try cursor.previous() : try cursor.next()
                }
            }
        }
    }
}
