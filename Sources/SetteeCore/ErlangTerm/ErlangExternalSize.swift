import Foundation

/// The size of a JSON value as CouchDB measures it for `_sum`'s overflow
/// check: `?term_size` (couch_db.hrl), Erlang's `external_size` with
/// `{minor_version, 1}` of the value as CouchDB holds it (jiffy's EJSON:
/// objects `{[{Key, Value}]}`, strings binaries, `null`, `true`, `false` atoms).
package enum ErlangExternalSize {
    /// `external_size` of a whole term: the version byte, then the term.
    package static func term(_ value: JSONValue) -> Int { 1 + encoded(value) }

    /// One row of a reduce's input, `[[Key, DocId], Value]`, given the sizes
    /// of its encoded parts (without version bytes).
    package static func reduceRow(key: Int, idBytes: Int, value: Int) -> Int {
        // LIST_EXT [[K, Id], V]: 5 + (5 + K + binary(Id) + NIL) + V + NIL.
        5 + (5 + key + 5 + idBytes + 1) + value + 1
    }

    /// One row of a rereduce's input, `[[], Value]`.
    package static func rereduceRow(value: Int) -> Int { 5 + 1 + value + 1 }

    /// A list of rows whose encoded sizes add to `rows`, as a whole term.
    package static func rowList(count: Int, rows: Int) -> Int { 1 + (count == 0 ? 1 : 5 + rows + 1) }

    /// The encoded size of a value, without the version byte.
    package static func encoded(_ value: JSONValue) -> Int {
        switch value {
        case .null, .bool(true): return 7  // ATOM_EXT: 3 + "null" / "true"
        case .bool(false): return 8
        case .number(let x, _): return number(x)
        case .string(let text): return 5 + text.utf8.count  // BINARY_EXT
        case .array(let elements):
            if elements.isEmpty { return 1 }  // NIL_EXT
            // A list of integers 0...255 is a STRING_EXT.
            if elements.count < 65536, elements.allSatisfy({ if case .number(let x, _) = $0 { return x >= 0 && x <= 255 && x == x.rounded() }; return false }) {
                return 3 + elements.count
            }
            return 5 + elements.reduce(0) { $0 + encoded($1) } + 1
        case .object(let members):
            // SMALL_TUPLE_EXT {Props}; Props a list of SMALL_TUPLE_EXT {Key, Value}.
            if members.isEmpty { return 2 + 1 }
            return 2 + 5 + members.reduce(0) { $0 + 2 + 5 + $1.key.utf8.count + encoded($1.value) } + 1
        }
    }

    private static func number(_ x: Double) -> Int {
        guard ErlangNumber(json: x).isInteger else { return 9 }  // NEW_FLOAT_EXT
        if x >= 0 && x <= 255 { return 2 }  // SMALL_INTEGER_EXT
        if x >= -2_147_483_648 && x <= 2_147_483_647 { return 5 }  // INTEGER_EXT
        // SMALL_BIG_EXT: tag, length, sign, then the magnitude's bytes.
        var magnitude = x.magnitude
        var bytes = 0
        while magnitude >= 1 {
            magnitude = (magnitude / 256).rounded(.down)
            bytes += 1
        }
        return 3 + bytes
    }
}
