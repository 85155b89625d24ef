import Foundation
public import SetteeCore

extension ViewQueryOptions {
    /// Options whose keys are Swift values, encoded as Settee encodes
    /// documents (``JSONValue/init(encoding:)``: strings, numbers, dates as
    /// ISO 8601 text, arrays, `Codable` structs), so that they match the keys
    /// views emit from documents holding the same values:
    ///
    /// ```swift
    /// ViewQueryOptions(key: tag)
    /// ViewQueryOptions(startKey: [author], endKey: [JSONValue.string(author), .highest])
    /// ViewQueryOptions(startKey: from, endKey: to, descending: true)     // Dates
    /// ViewQueryOptions(keys: ["ann", "bob"])
    /// ```
    ///
    /// Each key may be of its own type. A key that does not encode (a
    /// non-finite `Double`) makes the query fail with a ``QueryError``
    /// (`bad_request`) naming it. The other options mean what they mean
    /// where keys are given as ``JSONValue``s (literals pick that form).
    public init<Key: Encodable, Keys: Encodable, StartKey: Encodable, EndKey: Encodable>(
        key: Key? = JSONValue?.none, keys: [Keys]? = [JSONValue]?.none,
        startKey: StartKey? = JSONValue?.none, endKey: EndKey? = JSONValue?.none,
        inclusiveEnd: Bool = true, descending: Bool = false, limit: Int? = nil, skip: Int = 0,
        reduce: Bool? = nil, group: Bool? = nil, groupLevel: Int? = nil, includeDocs: Bool = false,
        update: UpdateMode = .true
    ) {
        self.init(inclusiveEnd: inclusiveEnd, descending: descending, limit: limit, skip: skip, reduce: reduce, group: group,
                  groupLevel: groupLevel, includeDocs: includeDocs, update: update)
        self.key = encodedKey(key, named: "key")
        if let keys {
            var encoded: [JSONValue] = []
            for element in keys { encoded.append(encodedKey(element, named: "keys") ?? .null) }
            self.keys = encoded
        }
        self.startKey = encodedKey(startKey, named: "startkey")
        self.endKey = encodedKey(endKey, named: "endkey")
    }

    /// A key from a Swift value; nil for none. A value that does not encode
    /// is kept as the failure validation reports.
    private mutating func encodedKey(_ value: (some Encodable)?, named name: String) -> JSONValue? {
        guard let value else { return nil }
        if let json = value as? JSONValue { return json }
        do {
            return try JSONValue(encoding: value)
        } catch {
            if keyEncodingFailure == nil { keyEncodingFailure = "`\(name)` does not encode as JSON: \(error)" }
            return nil
        }
    }

    /// Options selecting the rows whose key is an array that starts with
    /// `prefix`'s elements (see ``setKeyPrefix(_:)``):
    ///
    /// ```swift
    /// ViewQueryOptions(keyPrefix: [tag])                     // ["swift"], ["swift", date], …
    /// ViewQueryOptions(keyPrefix: [tag], descending: true, limit: 10)
    /// ```
    public init(keyPrefix prefix: some Encodable, inclusiveEnd: Bool = true, descending: Bool = false, limit: Int? = nil,
                skip: Int = 0, reduce: Bool? = nil, group: Bool? = nil, groupLevel: Int? = nil, includeDocs: Bool = false,
                update: UpdateMode = .true) {
        self.init(inclusiveEnd: inclusiveEnd, descending: descending, limit: limit, skip: skip, reduce: reduce, group: group,
                  groupLevel: groupLevel, includeDocs: includeDocs, update: update)
        setKeyPrefix(prefix)
    }

    /// Selects the rows whose key is an array that starts with `prefix`'s
    /// elements, CouchDB's `startkey=[…]&endkey=[…,{}]` (the other way round
    /// when ``descending``): with `["swift"]`, the keys `["swift"]`,
    /// `["swift", 2026]`, `["swift", "x", 1]`…
    ///
    /// - Parameter prefix: A value that encodes as a JSON array (an array or tuple-like `Codable`).
    public mutating func setKeyPrefix(_ prefix: some Encodable) {
        guard let low = encodedKey(prefix, named: "key prefix") else { return }
        guard case .array(let elements) = low else {
            if keyEncodingFailure == nil { keyEncodingFailure = "a key prefix must encode as a JSON array, not \(low.jsonText)" }
            return
        }
        let high = JSONValue.array(elements + [.highest])
        (startKey, endKey) = descending ? (high, low) : (low, high)
    }
}
