import Foundation
import Synchronization

/// New document ids and `/_uuids`, by CouchDB's `[uuids] algorithm`
/// (`couch_uuids`): 32 hexadecimal digits but for `utc_id`.
final class UUIDGenerator: Sendable {
    enum Algorithm: Sendable, Equatable {
        /// 128 random bits.
        case random
        /// A random 26-digit prefix and a 6-digit counter that grows by a
        /// random step from 1 to 0xffd; a new prefix when it passes 0xfff000.
        /// Ids sort in the order they were made, until the prefix changes.
        case sequential
        /// Microseconds since 1970 in 14 digits, then 18 random ones.
        case utcRandom
        /// Microseconds since 1970 in 14 digits, then `suffix`.
        case utcID(suffix: String)
    }

    private struct State {
        var prefix = PasswordHash.randomHex(13)
        var counter = Int.random(in: 1...0xffd)
        /// The last time stamp handed out, so that stamps always grow.
        var lastMicroseconds: UInt64 = 0
    }

    private let state = Mutex(State())

    /// `count` new ids by `algorithm`.
    func next(_ count: Int, by algorithm: Algorithm) -> [String] {
        state.withLock { state in
            (0..<count).map { _ in
                switch algorithm {
                case .random:
                    return PasswordHash.randomHex(16)
                case .sequential:
                    state.counter += Int.random(in: 1...0xffd)
                    if state.counter >= 0xfff000 {
                        state.prefix = PasswordHash.randomHex(13)
                        state.counter = Int.random(in: 1...0xffd)
                    }
                    return state.prefix + Self.hex(UInt64(state.counter), digits: 6)
                case .utcRandom:
                    return Self.stamp(&state) + PasswordHash.randomHex(9)
                case .utcID(let suffix):
                    return Self.stamp(&state) + suffix
                }
            }
        }
    }

    /// Now in microseconds since 1970, as 14 hexadecimal digits, later than the last one.
    private static func stamp(_ state: inout State) -> String {
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        state.lastMicroseconds = max(now, state.lastMicroseconds + 1)
        return hex(state.lastMicroseconds, digits: 14)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
