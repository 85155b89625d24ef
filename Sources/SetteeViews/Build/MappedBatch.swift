import Foundation
package import SetteeCore
import SetteeStorage

/// One emitted row: which index it belongs to, and where its stored key and
/// value lie in its batch's ``MappedBatch/bytes``.
package struct MappedRow: Sendable {
    package var target: Int32
    package var keyStart: Int32
    package var keyLength: Int32
    package var valueLength: Int32
    package var valueStart: Int32 { keyStart + keyLength }
}

/// Changed documents read for mapping, each as map functions see it
/// (`{"_id":…,"_rev":…,…}`), back to back in one buffer.
package struct DocumentBatch: Sendable {
    package var sequences: [UInt64] = []
    package var ids = PackedByteStrings()
    package var json: [UInt8] = []
    /// Where each document's JSON ends in `json`; a deleted document's is empty.
    package var jsonEnds: [Int] = []

    package var count: Int { sequences.count }

    package func jsonRange(_ document: Int) -> Range<Int> {
        (document == 0 ? 0 : jsonEnds[document - 1])..<jsonEnds[document]
    }

    /// Empties the batch, keeping its buffers for the next one read into it
    /// (when nothing else holds them): a fresh buffer's pages are each
    /// faulted in and zeroed as the documents are copied into it.
    package mutating func removeAll() {
        sequences.removeAll(keepingCapacity: true)
        ids.removeAll(keepingCapacity: true)
        json.removeAll(keepingCapacity: true)
        jsonEnds.removeAll(keepingCapacity: true)
    }
}

/// What the map functions made of a run of documents: every row's stored key
/// and value back to back in one buffer, rows in document order, and the
/// documents' sequences and ids — no allocation per row or per document.
package struct MappedBatch: Sendable {
    package var sequences: [UInt64] = []
    package var ids = PackedByteStrings()
    package var bytes: [UInt8] = []
    package var rows: [MappedRow] = []
    /// Per document, the index of its first row in `rows` (one more entry at the end).
    package var documentRows: [Int] = [0]
    package var errors: [(document: Int, target: Int, error: JavaScriptError)] = []

    package var documentCount: Int { documentRows.count - 1 }

    /// The rows document `document` (its place in the batch) emitted, for every target.
    package func rows(of document: Int) -> ArraySlice<MappedRow> {
        rows[documentRows[document]..<documentRows[document + 1]]
    }

    /// Roughly the memory the batch holds.
    package var memoryBytes: Int {
        bytes.count + ids.bytes.count + rows.count * MemoryLayout<MappedRow>.stride + sequences.count * 20
    }

    package init() {}

    /// Makes room for `documents` documents in all, each taking what those
    /// it holds take on average, so that a batch gathering many does not
    /// grow by doubling: each doubling copies what it holds into new pages,
    /// faulted in and zeroed one by one.
    package mutating func reserveCapacity(documents: Int) {
        let held = documentCount
        guard held > 0, documents > held else { return }
        func reserve<Element>(_ array: inout [Element], extra: Int = 0) {
            let wanted = Int((Double(array.count - extra) / Double(held) * Double(documents)).rounded(.up)) + extra
            if wanted > array.capacity { array.reserveCapacity(wanted) }
        }
        reserve(&bytes)
        reserve(&rows)
        reserve(&documentRows, extra: 1)
        reserve(&sequences)
        reserve(&ids.bytes)
        reserve(&ids.ends)
    }

    /// The rows of the parts, mapped from consecutive slices of `documents`,
    /// copied once into buffers of the right size.
    package init(joining parts: [MappedBatch], of documents: DocumentBatch) {
        append(parts, of: documents)
    }

    /// Appends the documents and the rows their slices' parts hold, in order.
    /// A part's errors name documents by their place in `documents`.
    package mutating func append(_ parts: [MappedBatch], of documents: DocumentBatch) {
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
