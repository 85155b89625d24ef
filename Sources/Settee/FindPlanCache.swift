import Synchronization
import SetteeCore
import SetteeFind

/// The work `find` does on a request before reading anything (the selector
/// checked, normalized and compiled, the fields, the plan), kept per request
/// so that the same query asked again goes straight to the read.
///
/// A request is the same when its selector's JSON text, sort, fields,
/// `use_index`, `allow_fallback` and partition are: byte for byte, so two selectors
/// that only compare equal (`"é"` written precomposed and decomposed) are
/// two entries. A plan holds for one list of indexes: every entry is for the
/// list ``FindIndexCache`` handed out under one generation, and a list read
/// again from changed design documents (an index created or deleted, here or
/// by another process) has a new generation, which empties the cache.
///
/// A preparation whose plan holds for every selector of its shape (the same
/// fields, operators, array lengths, `true`, `false` and `null`; only other
/// strings and numbers: see `QueryPlanner.Plan.isReusable(for:indexes:)`) is
/// also kept by shape: a new request of that shape has its selector compiled
/// and the same index read in the ranges of its own values, without planning.
final class FindPlanCache: Sendable {
    /// What identifies a request's preparation: its selector as JSON text
    /// (numbers as written: `9007199254740993` is not `9007199254740992`),
    /// then its sort, fields, `use_index`, `allow_fallback` and partition, each part
    /// after a byte JSON text never holds, compared as bytes (Swift's
    /// `String` equality would take canonically equivalent names as one).
    struct Key: Hashable {
        var bytes: [UInt8]

        /// The bytes hashed at once (the synthesized hash combines them one at a time).
        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        static func == (a: Key, b: Key) -> Bool { a.bytes == b.bytes }

        /// The key of `request`; with `shape`, of every request like it whose selector
        /// has other strings and numbers (``shape(of:into:)``).
        init(_ request: FindRequest, databaseIsPartitioned: Bool, shape: Bool = false) {
            bytes = []
            bytes.reserveCapacity(64)
            if shape {
                Self.shape(of: request.selector, into: &bytes)
            } else {
                JSONWriter.write(request.selector, into: &bytes, literals: true)
            }
            for field in request.sort {
                bytes.append(field.descending ? 1 : 2)
                JSONWriter.writeString(field.field, into: &bytes)
            }
            for field in request.fields {
                bytes.append(3)
                JSONWriter.writeString(field, into: &bytes)
            }
            for name in request.useIndex {
                bytes.append(4)
                JSONWriter.writeString(name, into: &bytes)
            }
            bytes.append(request.allowFallback ? 5 : 6)
            // A partition query plans over other indexes, and matches the partition's documents only.
            bytes.append(databaseIsPartitioned ? 7 : 8)
            if let partition = request.partition {
                bytes.append(9)
                JSONWriter.writeString(partition, into: &bytes)
            }
        }

        /// `selector` as JSON text with each string and number (not member
        /// names) written as a byte JSON text never holds, one per type: the
        /// same for selectors whose shape is the same.
        static func shape(of selector: JSONValue, into bytes: inout [UInt8]) {
            switch selector {
            case .string: bytes.append(0x10)
            case .number: bytes.append(0x11)
            case .null, .bool: JSONWriter.write(selector, into: &bytes)
            case .array(let elements):
                bytes.append(UInt8(ascii: "["))
                for element in elements {
                    shape(of: element, into: &bytes)
                    bytes.append(UInt8(ascii: ","))
                }
                bytes.append(UInt8(ascii: "]"))
            case .object(let members):
                bytes.append(UInt8(ascii: "{"))
                for member in members {
                    JSONWriter.writeString(member.key, into: &bytes)
                    bytes.append(UInt8(ascii: ":"))
                    shape(of: member.value, into: &bytes)
                    bytes.append(UInt8(ascii: ","))
                }
                bytes.append(UInt8(ascii: "}"))
            }
        }
    }

    /// A preparation, shared rather than copied in and out of the table.
    private final class Entry: Sendable {
        let prepared: PreparedFind
        init(_ prepared: PreparedFind) { self.prepared = prepared }
    }

    private struct State {
        var generation = -1
        var entries: [Key: Entry] = Dictionary(minimumCapacity: FindPlanCache.capacity)
        /// Preparations whose plan serves every request of their shape, by shape.
        var shapes: [Key: Entry] = [:]
    }

    /// The most requests kept; when full, the cache starts again empty.
    static let capacity = 512
    /// The longest key kept: a request with a larger selector (a long `$in`
    /// list) is prepared each time rather than held.
    static let largestKey = 16 << 10

    private let state = Mutex(State())

    /// The preparation of `key` for the index list of `generation`, if kept.
    func prepared(_ key: Key, generation: Int) -> PreparedFind? {
        state.withLock { $0.generation == generation ? $0.entries[key]?.prepared : nil }
    }

    /// A preparation kept for the shape `key`, for the index list of `generation`.
    func prepared(shape key: Key, generation: Int) -> PreparedFind? {
        state.withLock { $0.generation == generation ? $0.shapes[key]?.prepared : nil }
    }

    /// Keeps a preparation made with the index list of `generation`, and for
    /// its `shape` too when given. One made with an older list than the
    /// entries' is not kept; a newer list drops them.
    func keep(_ prepared: PreparedFind, for key: Key, shape: Key? = nil, generation: Int) {
        guard key.bytes.count <= Self.largestKey else { return }
        let entry = Entry(prepared)
        state.withLock { state in
            if generation < state.generation { return }
            if generation > state.generation {
                state.entries.removeAll(keepingCapacity: true)
                state.shapes.removeAll()
                state.generation = generation
            }
            if state.entries.count >= Self.capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = entry
            if let shape {
                if state.shapes.count >= Self.capacity { state.shapes.removeAll() }
                state.shapes[shape] = entry
            }
        }
    }
}
