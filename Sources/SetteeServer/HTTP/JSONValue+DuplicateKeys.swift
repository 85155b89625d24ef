import Settee

extension JSONValue {
    /// The value with each object's repeated member names reduced to the
    /// last one, as CouchDB reads request bodies (jiffy's `dedupe_keys`):
    /// `{"a": 1, "a": 2}` is `{"a": 2}`.
    var lastMemberWins: JSONValue {
        switch self {
        case .object(let members):
            var seen = Set<String>()
            var hasRepeats = false
            for member in members where !seen.insert(member.key).inserted { hasRepeats = true; break }
            var kept: [(key: String, value: JSONValue)] = []
            kept.reserveCapacity(members.count)
            if hasRepeats {
                var last: [String: Int] = [:]
                for (index, member) in members.enumerated() { last[member.key] = index }
                for (index, member) in members.enumerated() where last[member.key] == index {
                    kept.append((member.key, member.value.lastMemberWins))
                }
            } else {
                for member in members { kept.append((member.key, member.value.lastMemberWins)) }
            }
            return .object(kept)
        case .array(let elements):
            return .array(elements.map(\.lastMemberWins))
        default:
            return self
        }
    }
}
