extension DocumentStore {
    /// The stored `_design/` documents (live ones).
    func designDocumentRecords() throws -> [Document] {
        try environment.read { transaction in
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
    }

    /// CouchDB's `_all_docs` over the `docs` table: ids in raw byte order, deleted documents left out.
    func allDocuments(_ options: ViewQueryOptions) throws -> ViewResult {
        try environment.read { transaction in
            var rows: [ViewRow] = []
            var skip = options.skip
            let limit = options.limit ?? .max
            var total = 0
            var offset = 0
            var started = false

            func emit(_ id: UnsafeRawBufferPointer, _ record: DocumentRecord) {
                let text = String(decoding: id, as: UTF8.self)
                var row = ViewRow(id: text, keyJSON: JSONValue.string(text).jsonText,
                                  valueJSON: #"{"rev":"\#(record.revision)"}"#)
                if options.includeDocs { row.documentJSON = record.document(id: text).json }
                rows.append(row)
            }

            if let keys = options.keys ?? options.key.map({ [$0] }) {
                // One row per requested key, in the order given; CouchDB reports missing and deleted ones too.
                for key in keys {
                    guard case .string(let id) = key else {
                        rows.append(ViewRow(id: nil, keyJSON: key.jsonText, valueJSON: "null", error: "not_found"))
                        continue
                    }
                    var bytes = id
                    try bytes.withUTF8 { idBytes in
                        if let value = try transaction.get(docs, UnsafeRawBufferPointer(idBytes)) {
                            let record = try DocumentRecord(bytes: value, id: idBytes, path: environment.path)
                            if record.isDeleted {
                                rows.append(ViewRow(id: id, keyJSON: key.jsonText, valueJSON: #"{"rev":"\#(record.revision)","deleted":true}"#,
                                                    documentJSON: options.includeDocs ? "null" : nil))
                            } else {
                                emit(UnsafeRawBufferPointer(idBytes), record)
                            }
                        } else {
                            rows.append(ViewRow(id: nil, keyJSON: key.jsonText, valueJSON: "null", error: "not_found"))
                        }
                    }
                }
                rows = Array(rows.dropFirst(options.skip).prefix(limit))
                let counts = try liveCount(in: transaction)
                return ViewResult(totalRows: counts, offset: nil, updateSequence: options.updateSeq ? try lastSequence(in: transaction) : nil,
                                  rows: rows)
            }

            let start = options.startKey?.stringValue.map { Array($0.utf8) }
            let end = options.endKey?.stringValue.map { Array($0.utf8) }
            try transaction.withCursor(docs) { cursor in
                var entry = options.descending ? try cursor.last() : try cursor.first()
                while let (key, value) = entry {
                    entry = options.descending ? try cursor.previous() : try cursor.next()
                    let record = try DocumentRecord(bytes: value, id: key, path: environment.path)
                    if record.isDeleted { continue }
                    total += 1
                    if !started {
                        if let start, options.descending ? compareBytes(key, start) > 0 : compareBytes(key, start) < 0 {
                            offset += 1
                            continue
                        }
                        started = true
                    }
                    if let end {
                        let order = compareBytes(key, end)
                        let past = options.descending ? (order < 0 || (order == 0 && !options.inclusiveEnd)) : (order > 0 || (order == 0 && !options.inclusiveEnd))
                        if past { continue }
                    }
                    if skip > 0 {
                        skip -= 1
                        continue
                    }
                    if rows.count < limit { emit(key, record) }
                }
            }
            return ViewResult(totalRows: total, offset: offset + options.skip,
                              updateSequence: options.updateSeq ? try lastSequence(in: transaction) : nil, rows: rows)
        }
    }

    private func liveCount(in transaction: LMDBTransaction) throws -> Int {
        var count = 0
        try transaction.withCursor(docs) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                if try !DocumentRecord(bytes: value, id: key, path: environment.path).isDeleted { count += 1 }
                entry = try cursor.next()
            }
        }
        return count
    }
}
