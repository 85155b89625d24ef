package import Foundation
import SetteeCore

/// How an import went.
public struct ImportReport: Sendable, Equatable {
    /// Documents written.
    public var imported = 0
    /// Inputs refused, each with where it was and why.
    public var rejected: [ImportRejection] = []
    /// Bytes read from the input.
    public var bytesRead = 0
}

/// An input document that was not imported.
public struct ImportRejection: Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line where the document starts in the input.
    public var line: Int
    /// Its `_id`, when it could be read.
    public var id: String?
    /// What was wrong.
    public var error: DocumentError

    public var description: String {
        "line \(line): \(error)"
    }
}

/// Progress of a running import, reported as each write transaction commits.
public struct ImportProgress: Sendable {
    /// Bytes read from the input so far, which runs ahead of what is written:
    /// the next transaction's documents are read while one commits.
    public var bytesRead: Int
    /// Bytes of the input up to the end of the last document written or
    /// rejected: the part of the input the import is done with.
    public var bytesCommitted: Int
    /// The input's size, when known (a file, not a pipe).
    public var totalBytes: Int?
    /// Documents written so far.
    public var imported: Int
    /// Documents rejected so far.
    public var rejected: Int

    /// The share of the input the import is done with (``bytesCommitted``
    /// of ``totalBytes``), when the input's size is known.
    public var fractionCommitted: Double? {
        totalBytes.map { Double(bytesCommitted) / Double(max($0, 1)) }
    }
}

/// Streams documents from NDJSON (one document per line) or from a JSON array
/// of documents into the store in large transactions. Bad documents are
/// reported by line and skipped; the good ones land.
package struct DocumentImporter {
    package let store: DocumentStore
    /// Refuses an edit before it is written (a design document the database
    /// cannot take): its ``DocumentError`` becomes the document's rejection.
    package var check: (@Sendable (DocumentEdit, LMDBTransaction) throws -> Void)?
    /// Documents per write transaction.
    package var batchDocuments = 50_000
    /// Input bytes per write transaction.
    package var batchBytes = 32 << 20
    package var chunkBytes = 4 << 20

    package init(store: DocumentStore, check: (@Sendable (DocumentEdit, LMDBTransaction) throws -> Void)? = nil,
                 batchDocuments: Int = 50_000, batchBytes: Int = 32 << 20, chunkBytes: Int = 4 << 20) {
        self.store = store
        self.check = check
        self.batchDocuments = batchDocuments
        self.batchBytes = batchBytes
        self.chunkBytes = chunkBytes
    }

    private enum Format {
        case undecided, lines, array
    }

    /// - Parameter read: returns the next chunk of input, or nil at the end.
    package func run(
        totalBytes: Int?, read: () throws -> Data?, progress: (ImportProgress) -> Void
    ) throws -> ImportReport {
        var report = ImportReport()
        // The batch's documents, raw: validated in parallel when the batch is written.
        var batch: [UInt8] = []
        var batchDocuments: [(line: Int, range: Range<Int>)] = []
        var buffer: [UInt8] = []
        var format = Format.undecided
        // A document longer than any limit is refused once that many of its
        // bytes are buffered; the rest of it is read and dropped, never held.
        let largest = store.sizeLimits.largest
        var splitter = ArraySplitter(largest: largest)
        var line = 1  // line number of buffer[0]
        // Where buffer[0] is in the input, and where the scan of the buffer began in memory:
        // together they place each accepted document in the input.
        var bufferOffset = 0
        var scanBase: UnsafeRawPointer?
        // The input offset just past the last document accepted into the batch, and past the
        // last one of the batch being written.
        var acceptedEnd = 0
        var committedEnd = 0
        // Whether buffer[0] is in the middle of a line refused as too large.
        var skippingLine = false
        func refuseTooLarge(line: Int, bytes: Int) {
            let error = store.sizeLimits.tooLarge(bytes: bytes, id: nil, limit: largest, atLeast: true)
            report.rejected.append(ImportRejection(line: line, id: nil, error: error))
        }

        // Batches are written on a background thread while the next one is read
        // and validated; `inFlight` is the batch being written.
        let writer = BackgroundJob<[Result<WriteResult, DocumentError>]>(label: "settee.import.writer")
        var inFlight: (edits: [(line: Int, edit: DocumentEdit)], rejections: [ImportRejection], inputEnd: Int)?
        // Never return (or throw) while a batch is still being written.
        defer { if inFlight != nil { _ = try? writer.wait() } }

        func collectWritten() throws {
            guard let written = inFlight else { return }
            inFlight = nil
            var rejections = written.rejections
            for (index, result) in try writer.wait().enumerated() {
                switch result {
                case .success: report.imported += 1
                case .failure(let error):
                    var error = error
                    if error.id == nil { error.id = written.edits[index].edit.id }
                    rejections.append(ImportRejection(line: written.edits[index].line, id: error.id, error: error))
                }
            }
            report.rejected += rejections.sorted { $0.line < $1.line }
            committedEnd = max(committedEnd, written.inputEnd)
            progress(ImportProgress(bytesRead: report.bytesRead, bytesCommitted: committedEnd, totalBytes: totalBytes, imported: report.imported, rejected: report.rejected.count))
        }

        func flush() throws {
            guard !batchDocuments.isEmpty else { return }
            let prepared = batch.withUnsafeBytes { bytes in
                Self.prepare(batchDocuments.map(\.range), in: bytes, sizeLimits: self.store.sizeLimits)
            }
            var rejections: [ImportRejection] = []
            var edits: [(line: Int, edit: DocumentEdit)] = []
            edits.reserveCapacity(prepared.count)
            for (index, outcome) in prepared.enumerated() {
                switch outcome {
                case .success(let edit): edits.append((batchDocuments[index].line, edit))
                case .failure(let error): rejections.append(ImportRejection(line: batchDocuments[index].line, id: error.id, error: error))
                }
            }
            batch.removeAll(keepingCapacity: true)
            batchDocuments.removeAll(keepingCapacity: true)
            try collectWritten()
            let store = store
            let check = check
            let batchEdits = edits.map(\.edit)
            writer.start { try store.write(batchEdits, checking: check) }
            inFlight = (edits, rejections, acceptedEnd)
        }

        func accept(_ document: UnsafeRawBufferPointer, line: Int) throws {
            if let scanBase, let start = document.baseAddress {
                acceptedEnd = bufferOffset + scanBase.distance(to: start) + document.count
            }
            batchDocuments.append((line, batch.count..<batch.count + document.count))
            batch.append(contentsOf: document)
            if batchDocuments.count >= self.batchDocuments || batch.count >= batchBytes { try flush() }
        }

        var finished = false
        while !finished {
            if let chunk = try read(), !chunk.isEmpty {
                buffer.append(contentsOf: chunk)
                report.bytesRead += chunk.count
            } else {
                finished = true
            }
            if format == .undecided {
                guard let first = buffer.firstIndex(where: { !isJSONWhitespace($0) }) else { continue }
                format = buffer[first] == UInt8(ascii: "[") ? .array : .lines
            }
            var consumed = 0
            try buffer.withUnsafeBytes { bytes in
                scanBase = bytes.baseAddress
                defer { scanBase = nil }
                switch format {
                case .lines:
                    var start = 0
                    if skippingLine, bytes.count > 0 {
                        if let found = memchr(bytes.baseAddress!, 0x0A, bytes.count) {
                            start = bytes.baseAddress!.distance(to: UnsafeRawPointer(found)) + 1
                            skippingLine = false
                            line += 1
                        } else {
                            start = bytes.count
                        }
                    }
                    while start < bytes.count {
                        let end: Int
                        if let found = memchr(bytes.baseAddress! + start, 0x0A, bytes.count - start) {
                            end = bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
                        } else if finished {
                            end = bytes.count
                        } else {
                            // An unfinished line: refused once it is too long for any document.
                            let pending = trimmed(UnsafeRawBufferPointer(rebasing: bytes[start...]))
                            if pending.count > largest {
                                refuseTooLarge(line: line, bytes: pending.count)
                                skippingLine = true
                                start = bytes.count
                            }
                            break
                        }
                        let text = trimmed(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                        if !text.isEmpty { try accept(text, line: line) }
                        line += 1
                        start = min(end + 1, bytes.count)
                    }
                    consumed = start
                case .array:
                    consumed = try splitter.split(bytes, finished: finished) { element, elementLine in
                        try accept(element, line: elementLine)
                    } rejected: { reason, elementLine in
                        report.rejected.append(ImportRejection(line: elementLine, id: nil, error: DocumentError(.badRequest, reason)))
                    } tooLarge: { bytes, elementLine in
                        refuseTooLarge(line: elementLine, bytes: bytes)
                    }
                case .undecided:
                    break
                }
            }
            if consumed > 0 {
                buffer.removeFirst(consumed)
                bufferOffset += consumed
            }
        }
        try flush()
        try collectWritten()
        ProcessMemory.returnFreeMemory()
        return report
    }
}

/// Writes one batch at a time on its own thread (each write transaction begins
/// and commits inside one block, as LMDB requires).
extension DocumentImporter {
    /// Validates documents on every core (CouchDB's rules, body and its digest).
    package static func prepare(_ ranges: [Range<Int>], in bytes: UnsafeRawBufferPointer, sizeLimits: DocumentSizeLimits) -> [Result<DocumentEdit, DocumentError>] {
        let parts = min(ProcessInfo.processInfo.activeProcessorCount, max(1, ranges.count / 256))
        let slice = (ranges.count + parts - 1) / parts
        var results = [Result<DocumentEdit, DocumentError>](repeating: .failure(DocumentError(.badRequest, "")), count: ranges.count)
        results.withUnsafeMutableBufferPointer { results in
            // Each iteration writes its own slice; the input outlives the call.
            nonisolated(unsafe) let results = results
            nonisolated(unsafe) let bytes = bytes
            DispatchQueue.concurrentPerform(iterations: parts) { part in
                for index in part * slice..<min(ranges.count, (part + 1) * slice) {
                    let document = UnsafeRawBufferPointer(rebasing: bytes[ranges[index]])
                    results[index] = Result { () throws(DocumentError) in try DocumentEdit(json: document, sizeLimits: sizeLimits) }
                }
            }
        }
        return results
    }
}

@inline(__always)
package func isJSONWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
}

private func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
    var start = 0
    var end = bytes.count
    while start < end && isJSONWhitespace(bytes[start]) { start += 1 }
    while end > start && isJSONWhitespace(bytes[end - 1]) { end -= 1 }
    return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
}

/// Finds the elements of a top-level JSON array in a stream without parsing
/// them (each is validated on its own afterwards): tracks nesting and strings
/// only, so memory holds one element at a time, and no more of an element
/// than `largest` bytes: one that runs past it is refused and the rest of it
/// dropped as it arrives.
private struct ArraySplitter {
    /// The most bytes an element may take (the largest document accepted).
    let largest: Int
    private var opened = false
    private var closed = false
    private var line = 1
    /// The scan of an element refused as too large, carried from chunk to
    /// chunk until its end is found.
    private var skipping: ElementScan?

    init(largest: Int) {
        self.largest = largest
    }

    /// Where a scan through an element is: nesting, strings, and the line.
    private struct ElementScan {
        var depth = 0
        var inString = false
        var escaped = false
        var line: Int
    }

    /// Calls `element` for each complete element in `bytes`; returns how many
    /// bytes were consumed (the rest begins an element not yet complete).
    mutating func split(
        _ bytes: UnsafeRawBufferPointer, finished: Bool,
        element: (UnsafeRawBufferPointer, Int) throws -> Void,
        rejected: (String, Int) -> Void,
        tooLarge: (_ bytes: Int, _ line: Int) -> Void
    ) throws -> Int {
        var index = 0
        let count = bytes.count
        if var scan = skipping {
            let end = Self.findEnd(bytes, from: &index, &scan)
            line = scan.line
            guard let end else {
                skipping = scan
                return count
            }
            skipping = nil
            index = end
        }
        while index < count {
            let byte = bytes[index]
            if byte == 0x0A { line += 1; index += 1; continue }
            if isJSONWhitespace(byte) || (opened && !closed && byte == UInt8(ascii: ",")) { index += 1; continue }
            if closed {
                rejected("unexpected text after the end of the array", line)
                return count
            }
            if !opened {
                opened = true  // the format check saw `[` first
                index += 1
                continue
            }
            if byte == UInt8(ascii: "]") {
                closed = true
                index += 1
                continue
            }
            // One element: scan to its end at nesting level zero.
            let start = index
            let startLine = line
            var scan = ElementScan(line: line)
            guard let end = Self.findEnd(bytes, from: &index, &scan) else {
                let pending = trimmed(UnsafeRawBufferPointer(rebasing: bytes[start...])).count
                if pending > largest {
                    // Too large already: refused, and the rest of it dropped as it comes.
                    tooLarge(pending, startLine)
                    skipping = scan
                    line = scan.line
                    return count
                }
                // Incomplete: keep it for the next chunk, unless there is none.
                line = startLine
                if finished {
                    rejected("unterminated array element", startLine)
                    return count
                }
                return start
            }
            line = scan.line
            try element(trimmed(UnsafeRawBufferPointer(rebasing: bytes[start..<end])), startLine)
            index = end
        }
        if finished && opened && !closed && skipping == nil {
            rejected("the array is not closed with `]`", line)
        }
        return count
    }

    /// Scans from `index` to the end of an element: the `,` or `]` that follows
    /// it at nesting level zero, whose index it returns; nil (with `index` at
    /// the end of `bytes`) when the bytes end first.
    private static func findEnd(_ bytes: UnsafeRawBufferPointer, from index: inout Int, _ scan: inout ElementScan) -> Int? {
        let count = bytes.count
        while index < count {
            let c = bytes[index]
            if c == 0x0A { scan.line += 1 }
            if scan.inString {
                if scan.escaped {
                    scan.escaped = false
                } else if c == UInt8(ascii: "\\") {
                    scan.escaped = true
                } else if c == UInt8(ascii: "\"") {
                    scan.inString = false
                }
            } else if c == UInt8(ascii: "\"") {
                scan.inString = true
            } else if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
                scan.depth += 1
            } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                if scan.depth == 0 { return index }
                scan.depth -= 1
            } else if c == UInt8(ascii: ",") && scan.depth == 0 {
                return index
            }
            index += 1
        }
        return nil
    }
}
