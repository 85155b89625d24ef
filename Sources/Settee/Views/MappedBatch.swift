import Foundation

/// One emitted row: which index it belongs to, and where its stored key and
/// value lie in its batch's ``MappedBatch/bytes``.
struct MappedRow: Sendable {
    var target: Int32
    var keyStart: Int32
    var keyLength: Int32
    var valueLength: Int32
    var valueStart: Int32 { keyStart + keyLength }
}

/// The ids of a batch's documents, back to back in one buffer.
struct DocumentIDs: Sendable {
    var bytes: [UInt8] = []
    /// Where each id ends in `bytes`.
    var ends: [Int32] = []

    func range(_ document: Int) -> Range<Int> {
        (document == 0 ? 0 : Int(ends[document - 1]))..<Int(ends[document])
    }

    func string(_ document: Int) -> String {
        String(decoding: bytes[range(document)], as: UTF8.self)
    }

    mutating func append(_ id: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: id)
        ends.append(Int32(bytes.count))
    }

    mutating func append(contentsOf other: DocumentIDs) {
        let base = Int32(bytes.count)
        bytes.append(contentsOf: other.bytes)
        ends.append(contentsOf: other.ends.lazy.map { $0 + base })
    }
}

/// Changed documents read for mapping, each as map functions see it
/// (`{"_id":…,"_rev":…,…}`), back to back in one buffer.
struct DocumentBatch: Sendable {
    var sequences: [UInt64] = []
    var ids = DocumentIDs()
    var json: [UInt8] = []
    /// Where each document's JSON ends in `json`; a deleted document's is empty.
    var jsonEnds: [Int] = []

    var count: Int { sequences.count }

    func jsonRange(_ document: Int) -> Range<Int> {
        (document == 0 ? 0 : jsonEnds[document - 1])..<jsonEnds[document]
    }
}

/// What the map functions made of a run of documents: every row's stored key
/// and value back to back in one buffer, rows in document order, and the
/// documents' sequences and ids — no allocation per row or per document.
struct MappedBatch: Sendable {
    var sequences: [UInt64] = []
    var ids = DocumentIDs()
    var bytes: [UInt8] = []
    var rows: [MappedRow] = []
    /// Per document, the index of its first row in `rows` (one more entry at the end).
    var documentRows: [Int] = [0]
    var errors: [(document: Int, target: Int, error: JavaScriptError)] = []

    var documentCount: Int { documentRows.count - 1 }

    /// Roughly the memory the batch holds.
    var memoryBytes: Int {
        bytes.count + ids.bytes.count + rows.count * MemoryLayout<MappedRow>.stride + sequences.count * 20
    }

    init() {}

    /// The rows of the parts, mapped from consecutive slices of `documents`,
    /// copied once into buffers of the right size.
    init(joining parts: [MappedBatch], of documents: DocumentBatch) {
        append(parts, of: documents)
    }

    /// Appends the documents and the rows their slices' parts hold, in order.
    /// A part's errors name documents by their place in `documents`.
    mutating func append(_ parts: [MappedBatch], of documents: DocumentBatch) {
        // Room for all the parts at once, growing as appends do (an exact
        // reservation on every append would copy the whole buffer each time).
        func reserve<Element>(_ array: inout [Element], adding count: Int) {
            if array.count + count > array.capacity { array.reserveCapacity(max(array.count + count, array.capacity * 2)) }
        }
        reserve(&bytes, adding: parts.reduce(0) { $0 + $1.bytes.count })
        reserve(&rows, adding: parts.reduce(0) { $0 + $1.rows.count })
        reserve(&documentRows, adding: documents.count)
        let documentBase = documentCount
        sequences.append(contentsOf: documents.sequences)
        ids.append(contentsOf: documents.ids)
        for part in parts {
            let byteBase = Int32(bytes.count)
            let rowBase = rows.count
            bytes.append(contentsOf: part.bytes)
            rows.append(contentsOf: part.rows.lazy.map { var row = $0; row.keyStart += byteBase; return row })
            documentRows.append(contentsOf: part.documentRows.dropFirst().lazy.map { $0 + rowBase })
            errors.append(contentsOf: part.errors.lazy.map { ($0.document + documentBase, $0.target, $0.error) })
        }
    }
}
