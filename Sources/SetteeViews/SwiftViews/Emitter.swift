public import SetteeCore

/// What an ``Indexer``'s map function emits rows with: `emit(key, value)`.
/// Valid only during the ``Indexer/map(_:_:)`` call it is given to.
public final class Emitter {
    // Not checked for exclusivity at run time (a check costs more than
    // the appends of a short row): an emitter serves one map call on one
    // thread, and nothing it calls while it appends emits again.

    /// The rows emitted so far, as JSON text: key, then value, each row's ends in `ends`.
    @exclusivity(unchecked) private(set) var text: [UInt8] = []
    /// Per row: where its key ends and where its value ends in `text`.
    @exclusivity(unchecked) private(set) var ends: [(key: Int, value: Int)] = []

    package init() {}

    /// Emits a row with this key and value.
    public func callAsFunction(_ key: JSONValue, _ value: JSONValue = nil) {
        JSONWriter.write(key, into: &text)
        let keyEnd = text.count
        JSONWriter.write(value, into: &text)
        ends.append((keyEnd, text.count))
    }

    /// Emits a row whose key and value are `Encodable` values, as JSON
    /// (see ``JSONValue/init(encoding:)``).
    public func callAsFunction<Key: Encodable, Value: Encodable>(encoding key: Key, _ value: Value) throws {
        self(try JSONValue(encoding: key), try JSONValue(encoding: value))
    }

    /// Emits a row whose key `writeKey` appends to the given bytes as JSON
    /// text, as ``JSONWriter`` writes it, and whose value is `null`; no row
    /// when it returns false (what it appended is taken back).
    package func emit(writingKey writeKey: (inout [UInt8]) throws -> Bool) rethrows {
        let start = text.count
        guard try writeKey(&text) else {
            text.removeSubrange(start...)
            return
        }
        let keyEnd = text.count
        text.append(contentsOf: "null".utf8)
        ends.append((keyEnd, text.count))
    }

    /// Forgets the rows emitted (before the next document).
    package func reset() {
        text.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with each row's key and value as JSON text, in the order emitted.
    package func forEachRow(_ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) rethrows {
        try text.withUnsafeBytes { bytes in
            var start = 0
            for (keyEnd, valueEnd) in ends {
                try body(UnsafeRawBufferPointer(rebasing: bytes[start..<keyEnd]), UnsafeRawBufferPointer(rebasing: bytes[keyEnd..<valueEnd]))
                start = valueEnd
            }
        }
    }
}
