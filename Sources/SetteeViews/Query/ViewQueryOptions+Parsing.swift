import Foundation
package import SetteeCore
import SetteeStorage

/// Reading a query string into ``ViewQueryOptions``, as `couch_mrview_http:parse_params/4`
/// and `parse_param/4` read one: parameters apply in the order given, a later `key`,
/// one-element `keys`, `startkey` or `endkey` replacing an earlier one's bounds.
extension ViewQueryOptions {
    /// Parses CouchDB query-string parameters, in order: name → raw text exactly as in a URL
    /// query after percent-decoding (keys as JSON: `"a"`, `[1,2]`; booleans `true`/`false`,
    /// any letter case; integers).
    ///
    /// Accepts every name CouchDB accepts, aliases included (`startkey`/`start_key`,
    /// `endkey`/`end_key`, `startkey_docid`/`start_key_doc_id`, `endkey_docid`/`end_key_doc_id`,
    /// `stale`); an empty name and names CouchDB does not know (`callback` included) are ignored.
    /// Repeated parameters apply in order, the later winning, as in CouchDB.
    ///
    /// - Throws: ``QueryError`` with CouchDB's error and reason, e.g.
    ///   `query_parse_error: Invalid boolean parameter: "yes"` or
    ///   `bad_request: invalid UTF-8 JSON`.
    public init(parameters: [(name: String, value: String)]) throws(QueryError) {
        self.init()
        // CouchDB decodes the first `keys` (chttpd:qs_json_value/3) before the other parameters.
        let firstKeysIndex = parameters.firstIndex { $0.name == "keys" }
        var firstKeys: JSONValue?
        if let firstKeysIndex {
            firstKeys = try Self.parseJSON(parameters[firstKeysIndex].value)
        }
        for (index, parameter) in parameters.enumerated() {
            let value = parameter.value
            switch parameter.name {
            case "":
                continue
            case "reduce":
                reduce = try Self.parseBoolean(value)
            case "key":
                setKey(try Self.parseJSON(value))
            case "keys":
                let isFirst = index == firstKeysIndex
                let decoded = isFirst ? firstKeys! : try Self.parseJSON(value)
                switch decoded {
                case .array(let elements) where elements.count == 1:
                    setKey(elements[0])
                    if isFirst { keys = elements }
                default:
                    keysJSON = decoded
                }
            case "startkey", "start_key":
                startKey = try Self.parseJSON(value)
            case "endkey", "end_key":
                endKey = try Self.parseJSON(value)
            case "startkey_docid", "start_key_doc_id":
                startKeyDocID = value
            case "endkey_docid", "end_key_doc_id":
                endKeyDocID = value
            case "limit":
                limit = try Self.parsePositiveInteger(value)
            case "stale":
                switch value {
                case "ok":
                    stable = true
                    update = .false
                case "update_after":
                    stable = true
                    update = .lazy
                default:
                    throw .queryParse("Invalid value for `stale`.")
                }
            case "stable":
                switch value {
                case "true": stable = true
                case "false": stable = false
                default: throw .queryParse("Invalid value for `stable`.")
                }
            case "update":
                guard let mode = UpdateMode(rawValue: value) else {
                    throw .queryParse("Invalid value for `update`.")
                }
                update = mode
            case "descending":
                descending = try Self.parseBoolean(value)
            case "skip":
                skip = try Self.parsePositiveInteger(value)
            case "group":
                group = try Self.parseBoolean(value)
            case "group_level":
                groupLevel = try Self.parsePositiveInteger(value)
            case "inclusive_end":
                inclusiveEnd = try Self.parseBoolean(value)
            case "include_docs":
                includeDocs = try Self.parseBoolean(value)
            case "attachments":
                if try Self.parseBoolean(value) { attachments = true }
            case "att_encoding_info":
                if try Self.parseBoolean(value) { attEncodingInfo = true }
            case "update_seq":
                updateSeq = try Self.parseBoolean(value)
            case "conflicts":
                conflicts = try Self.parseBoolean(value)
            case "sorted":
                sorted = try Self.parseBoolean(value)
            case "partition":
                try Self.validatePartition(value)
                partition = value
            default:
                continue
            }
        }
    }

    /// `key=K` (or a one-element `keys`): CouchDB sets both ends of the range to K,
    /// replacing any `startkey`/`endkey` given before it.
    private mutating func setKey(_ value: JSONValue) {
        key = value
        startKey = nil
        endKey = nil
    }

    // MARK: - Values

    /// `parse_boolean/1`: `true`/`false` in any letter case.
    package static func parseBoolean(_ text: String) throws(QueryError) -> Bool {
        let lowered = String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        switch lowered {
        case "true": return true
        case "false": return false
        default:
            throw .queryParse(erlangFormat("Invalid boolean parameter: ", text))
        }
    }

    /// `parse_int/1`: Erlang's `list_to_integer/1` (an optional sign, then decimal digits).
    /// Values beyond `Int` saturate, so a huge `limit` still fails the limit check.
    package static func parseInteger(_ text: String) throws(QueryError) -> Int {
        let bytes = Array(text.utf8)
        var index = 0
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            index = 1
        }
        let digits = bytes[index...]
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .queryParse(erlangFormat("Invalid value for integer: ", text))
        }
        var magnitude = 0
        var overflow = false
        for digit in digits where !overflow {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int(digit - 0x30))
            overflow = o1 || o2
            magnitude = sum
        }
        if overflow { return negative ? Int.min : Int.max }
        return negative ? -magnitude : magnitude
    }

    /// `parse_pos_int/1`: an integer >= 0.
    package static func parsePositiveInteger(_ text: String) throws(QueryError) -> Int {
        let value = try parseInteger(text)
        guard value >= 0 else {
            throw .queryParse(erlangFormat("Invalid value for positive integer: ", text))
        }
        return value
    }

    /// `?JSON_DECODE` (jiffy with `dedupe_keys`); any failure is chttpd's
    /// `{bad_request, "invalid UTF-8 JSON"}`.
    package static func parseJSON(_ text: String) throws(QueryError) -> JSONValue {
        do {
            return dedupeKeys(try JSONParser.parse(text))
        } catch {
            throw .badRequest("invalid UTF-8 JSON")
        }
    }

    /// jiffy's `dedupe_keys`: of repeated object member names only the last member stays,
    /// in its own place. Names compare by bytes.
    package static func dedupeKeys(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let elements):
            return .array(elements.map(dedupeKeys))
        case .object(let members):
            var seen = Set<[UInt8]>()
            var kept: [(key: String, value: JSONValue)] = []
            for member in members.reversed() where seen.insert(Array(member.key.utf8)).inserted {
                kept.append((member.key, dedupeKeys(member.value)))
            }
            return .object(kept.reversed())
        default:
            return value
        }
    }

    /// `couch_partition:validate_partition/1`, as `parse_param/4` runs it.
    package static func validatePartition(_ partition: String) throws(QueryError) {
        if partition.isEmpty {
            throw QueryError(error: "illegal_partition", reason: "Partition must not be empty")
        }
        if partition.utf8.first == UInt8(ascii: "_") {
            throw QueryError(error: "illegal_partition", reason: "Partition must not start with an underscore")
        }
        if partition.utf8.contains(UInt8(ascii: ":")) {
            throw QueryError(error: "illegal_partition", reason: "Partition must not contain a colon")
        }
    }

    // MARK: - Erlang's ~p

    /// `io_lib:format(Prefix ++ "~p", [Value])` for a query-string value, which CouchDB holds
    /// as a list of bytes: a quoted string when every byte is printable Latin-1, otherwise a
    /// list of integers, wrapped as `io_lib_pretty` wraps it at 80 columns.
    package static func erlangFormat(_ prefix: String, _ value: String) -> String {
        prefix + erlangPrint(Array(value.utf8), column: prefix.utf8.count + 1)
    }

    /// `io_lib_pretty:print/2` of a flat list of bytes starting at 1-based `column`.
    package static func erlangPrint(_ bytes: [UInt8], column: Int) -> String {
        String(decoding: ErlangFormat.print(.list(bytes.map { .integer(Double($0)) }), column: column), as: UTF8.self)
    }
}
