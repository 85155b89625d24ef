import Foundation
import Settee
import SetteeCore
import SetteeStorage

/// Erlang terms as `term_to_binary(_, [{minor_version, 1}])` writes them:
/// what CouchDB hashes into a replication id.
enum ErlangTermWriter {
    indirect enum Term: Sendable {
        case atom(String)
        /// A binary (an Erlang `<<"…">>`).
        case binary(String)
        /// A string (an Erlang list of characters).
        case string(String)
        case integer(Int)
        case tuple([Term])
        case list([Term])
        /// A JSON value as jiffy decodes it (``ErlangExternalTerm``).
        case json(JSONValue)
    }

    /// The external term format of `term`, version byte first.
    static func bytes(_ term: Term) -> [UInt8] {
        var out: [UInt8] = [131]
        write(term, into: &out)
        return out
    }

    private static func write(_ term: Term, into out: inout [UInt8]) {
        switch term {
        case .atom(let name):
            let bytes = Array(name.utf8)
            out.append(100)
            appendUInt16(bytes.count, to: &out)
            out += bytes
        case .binary(let text):
            let bytes = Array(text.utf8)
            out.append(109)
            appendUInt32(bytes.count, to: &out)
            out += bytes
        case .string(let text):
            let bytes = Array(text.utf8)
            if bytes.isEmpty {
                out.append(106)
            } else if bytes.count < 65536 {
                out.append(107)
                appendUInt16(bytes.count, to: &out)
                out += bytes
            } else {
                write(.list(bytes.map { .integer(Int($0)) }), into: &out)
            }
        case .integer(let value):
            if (0...255).contains(value) {
                out += [97, UInt8(value)]
            } else {
                out.append(98)
                appendUInt32(Int(UInt32(bitPattern: Int32(truncatingIfNeeded: value))), to: &out)
            }
        case .tuple(let elements):
            out += [104, UInt8(elements.count)]
            for element in elements { write(element, into: &out) }
        case .list(let elements):
            guard !elements.isEmpty else { out.append(106); return }
            out.append(108)
            appendUInt32(elements.count, to: &out)
            for element in elements { write(element, into: &out) }
            out.append(106)
        case .json(let value):
            var text = value.exactJSONText
            out += text.withUTF8 { ErlangExternalTerm.json(UnsafeRawBufferPointer($0)) } ?? []
        }
    }

    private static func appendUInt16(_ value: Int, to out: inout [UInt8]) {
        out += [UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    private static func appendUInt32(_ value: Int, to out: inout [UInt8]) {
        out += [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
                UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }
}

/// CouchDB 3.x's replication id (`couch_replicator_ids`, version 4): the
/// MD5 of `[ServerUUID, Source, Target | Filter]`, each endpoint
/// `{remote, User, Host, Port, Path, Headers, undefined}`. The base id names
/// the checkpoint documents (`_local/<base>`); continuous and create-target
/// replications add `+continuous`, `+create_target` to the full id.
struct ReplicationID: Sendable, Equatable {
    var base: String
    var options: String

    var full: String { base + options }
    var checkpointID: String { "_local/" + base }

    init(serverUUID: String, source: ErlangTermWriter.Term, target: ErlangTermWriter.Term,
         filter: [ErlangTermWriter.Term], options: ReplicationOptions) {
        let term = ErlangTermWriter.Term.list([.binary(serverUUID), source, target] + filter)
        base = MD5.hash(ErlangTermWriter.bytes(term)).hexString
        self.options = (options.continuous ? "+continuous" : "") + (options.createTarget ? "+create_target" : "")
    }

    /// An endpoint's term: a remote one's as CouchDB writes it; a local
    /// database has none in CouchDB: `{local, Path}` keeps ids apart.
    static func term(of endpoint: ReplicationEndpoint) -> ErlangTermWriter.Term {
        switch endpoint {
        case .local(let database): return .tuple([.atom("local"), .binary(database.url.standardizedFileURL.path)])
        case .remote(let database): return remoteTerm(database)
        }
    }

    /// A remote endpoint's term: `{remote, User, Host, Port, Path, [], undefined}`
    /// (`get_v4_endpoint`), the port `default` for 80, 443 and 5984 as CouchDB has it.
    static func remoteTerm(_ database: RemoteDatabase) -> ErlangTermWriter.Term {
        let components = URLComponents(url: database.url, resolvingAgainstBaseURL: false)
        let scheme = components?.scheme?.lowercased() ?? "http"
        let port: ErlangTermWriter.Term
        switch (scheme, components?.port) {
        case (_, nil), ("https", 443?), ("http", 80?), ("http", 5984?): port = .atom("default")
        case (_, let number?): port = .integer(number)
        }
        return .tuple([.atom("remote"), database.username.map { .string($0) } ?? .atom("undefined"),
                       .string(components?.host ?? ""), port, .string(components?.percentEncodedPath ?? "/"),
                       .list([]), .atom("undefined")])
    }

    /// The filter's part of the term: `[DocIds]` (sorted, unique),
    /// `[Selector]` (normalized, keys sorted), `[Code, QueryParams]`.
    static func filterTerms(_ filter: ReplicationFilter, functionSource: String?) throws -> [ErlangTermWriter.Term] {
        switch filter {
        case .none: return []
        case .documentIDs(let ids):
            let sorted = Set(ids).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            return [.list(sorted.map { .binary($0) })]
        case .selector(let selector):
            let normalized: JSONValue
            do { normalized = try MangoSelector(selector).normalized } catch {
                throw ReplicationError.invalidOptions("Invalid selector: \(error)")
            }
            return [.json(sortingKeys(normalized))]
        case .function(_, let parameters):
            let code = (functionSource ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            return [.binary(code), .json(.object(parameters.map { ($0.key, .string($0.value)) }))]
        }
    }

    /// CouchDB's `ejsort`: every object's members sorted by key.
    static func sortingKeys(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.map { ($0.0, sortingKeys($0.1)) }
                .sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) })
        case .array(let elements): return .array(elements.map(sortingKeys))
        default: return value
        }
    }
}
