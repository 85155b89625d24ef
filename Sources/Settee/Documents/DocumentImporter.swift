import Foundation

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

/// Progress of a running import.
public struct ImportProgress: Sendable {
    public var bytesRead: Int
    /// The input's size, when known (a file, not a pipe).
    public var totalBytes: Int?
    public var imported: Int
    public var rejected: Int
}

/// Streams documents from NDJSON (one document per line) or from a JSON array
/// of documents into the store in large transactions. Bad documents are
/// reported by line and skipped; the good ones land.
struct DocumentImporter {
    let store: DocumentStore
    /// Documents per write transaction.
    var batchDocuments = 50_000
    /// Input bytes per write transaction.
    var batchBytes = 32 << 20
    var chunkBytes = 4 << 20

    private enum Format {
        case undecided, lines, array
    }

    /// - Parameter read: returns the next chunk of input, or nil at the end.
    func run(
        totalBytes: Int?, read: () throws -> Data?, progress: (ImportProgress) -> Void
    ) throws -> ImportReport {
        var report = ImportReport()
        var pending: [(line: Int, edit: DocumentEdit)] = []
        var pendingBytes = 0
        var buffer: [UInt8] = []
        var format = Format.undecided
        var splitter = ArraySplitter()
        var line = 1  // line number of buffer[0]

        func flush() throws {
            guard !pending.isEmpty else { return }
            let results = try store.write(pending.map(\.edit))
            for (index, result) in results.enumerated() {
                switch result {
                case .success: report.imported += 1
                case .failure(let error):
                    var error = error
                    if error.id == nil { error.id = pending[index].edit.id }
                    report.rejected.append(ImportRejection(line: pending[index].line, id: error.id, error: error))
                }
            }
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
            progress(ImportProgress(bytesRead: report.bytesRead, totalBytes: totalBytes, imported: report.imported, rejected: report.rejected.count))
        }

        func accept(_ document: UnsafeRawBufferPointer, line: Int) throws {
            switch Result(catching: { () throws(DocumentError) in try DocumentEdit(json: document) }) {
            case .success(let edit):
                pending.append((line, edit))
                pendingBytes += document.count
            case .failure(let error):
                report.rejected.append(ImportRejection(line: line, id: error.id, error: error))
            }
            if pending.count >= batchDocuments || pendingBytes >= batchBytes { try flush() }
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
                switch format {
                case .lines:
                    var start = 0
                    while start < bytes.count {
                        let end: Int
                        if let found = memchr(bytes.baseAddress! + start, 0x0A, bytes.count - start) {
                            end = bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
                        } else if finished {
                            end = bytes.count
                        } else {
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
                    }
                case .undecided:
                    break
                }
            }
            if consumed > 0 { buffer.removeFirst(consumed) }
        }
        try flush()
        return report
    }
}

@inline(__always)
func isJSONWhitespace(_ byte: UInt8) -> Bool {
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
/// only, so memory holds one element at a time.
private struct ArraySplitter {
    private var opened = false
    private var closed = false
    private var line = 1

    /// Calls `element` for each complete element in `bytes`; returns how many
    /// bytes were consumed (the rest begins an element not yet complete).
    mutating func split(
        _ bytes: UnsafeRawBufferPointer, finished: Bool,
        element: (UnsafeRawBufferPointer, Int) throws -> Void,
        rejected: (String, Int) -> Void
    ) throws -> Int {
        var index = 0
        let count = bytes.count
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
            var depth = 0
            var inString = false
            var escaped = false
            var end: Int?
            var scanLine = line
            while index < count {
                let c = bytes[index]
                if c == 0x0A { scanLine += 1 }
                if inString {
                    if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { inString = false }
                } else if c == UInt8(ascii: "\"") {
                    inString = true
                } else if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
                    depth += 1
                } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                    if depth == 0 { end = index; break }
                    depth -= 1
                } else if c == UInt8(ascii: ",") && depth == 0 {
                    end = index
                    break
                }
                index += 1
            }
            guard let end else {
                // Incomplete: keep it for the next chunk, unless there is none.
                line = startLine
                if finished {
                    rejected("unterminated array element", startLine)
                    return count
                }
                return start
            }
            line = scanLine
            try element(trimmed(UnsafeRawBufferPointer(rebasing: bytes[start..<end])), startLine)
            index = end
        }
        if finished && opened && !closed {
            rejected("the array is not closed with `]`", line)
        }
        return count
    }
}
