import Foundation
import Settee

/// Standard output written through a fixed buffer, for results printed as
/// they are read: memory holds the buffer, never the whole result.
final class StreamedOutput {
    private var buffer: [UInt8] = []
    /// Bytes gathered before they are written.
    private let capacity = 64 << 10

    init() {
        buffer.reserveCapacity(capacity + 4096)
    }

    /// Appends what `body` writes, and writes the buffer out once it is full.
    func write(_ body: (inout [UInt8]) -> Void) {
        body(&buffer)
        if buffer.count >= capacity { flush() }
    }

    func write(_ text: String) {
        write { $0.append(contentsOf: text.utf8) }
    }

    /// Writes out what the buffer holds.
    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

extension StreamedOutput {
    /// Prints a view or `_all_docs` result as CouchDB's response JSON (what
    /// `print(result.json)` prints for a whole one, byte for byte), handing
    /// `read` the callbacks that receive its header and rows as they are read.
    func printResult(_ read: (_ header: (ViewResultHeader) -> Void, _ row: (ViewRow) -> Void) throws -> Void) throws {
        var first = true
        try read({ header in
            self.write { header.writeJSONOpening(into: &$0) }
        }, { row in
            self.write { out in
                if !first { out.append(UInt8(ascii: ",")) }
                row.writeJSON(into: &out)
            }
            first = false
        })
        write { out in
            ViewResultHeader.writeJSONClosing(into: &out)
            out.append(0x0A)
        }
        flush()
    }
}
