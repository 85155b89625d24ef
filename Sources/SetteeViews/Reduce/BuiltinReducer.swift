package import SetteeCore
import SetteeStorage
/// A built-in reducer, run natively with CouchDB's semantics (CouchDB 3.x,
/// `src/couch/src/couch_query_servers.erl`). Partial results are `JSONValue`s so
/// they can be stored and combined later (stored reductions).
///
/// Partials:
/// - `_count`: the count, a number.
/// - `_sum`: the sum (a number, an array or an object), or CouchDB's error value
///   `{"error":"builtin_reduce_error","reason":…,"caused_by":…}`, which every
///   later rereduce passes on unchanged.
/// - `_stats`: the packed stats object `{"sum","count","min","max","sumsqr"}`
///   (or an array of them, nested like the emitted arrays), the same shape
///   CouchDB shows; CouchDB's `_stats` accepts such objects as input, so
///   rereducing them is exact.
/// - `_approx_count_distinct`: a string holding the HyperLogLog registers
///   (see `HyperLogLog.encoded`); `finalValue` turns it into the estimate.
/// - `_first`, `_last`: `[key, id, value]` of the row; `finalValue` is its value.
/// - `_top_N`, `_bottom_N`: the ranked values themselves, as CouchDB shows them.
///
/// Where CouchDB *returns* an error (only `_sum`, and `_count`'s rereduce, which
/// is `_sum`'s code) it becomes the partial, exactly as CouchDB builds it. Where
/// CouchDB *raises* one (every `_stats` input error, a few `_sum` mixes that crash
/// CouchDB's reducer) the whole reduce fails; the `checked…` methods throw a
/// `BuiltinReduceFailure` for those, and the plain methods return the failure's
/// `{"error":…,"reason":…}` object instead so that they never throw. A caller that
/// wants CouchDB's behaviour (the query fails) uses the `checked…` methods.
package enum BuiltinReducer: Sendable, Hashable {
    case count
    case sum
    case stats
    case approximateCountDistinct
    /// CouchDB 3.5's `_first`: the value of the group's first row (lowest key, then doc id).
    case first
    /// CouchDB 3.5's `_last`: the value of the group's last row.
    case last
    /// CouchDB 3.5's `_top_N`: the N highest distinct values, highest first.
    case top(Int)
    /// CouchDB 3.5's `_bottom_N`: the N lowest distinct values, lowest first.
    case bottom(Int)

    /// The largest N of `_top_N` and `_bottom_N` (`?MAX_RANK` in couch_mrview.erl).
    package static let maximumRank = 100

    /// The reducer's name in a design document (`_top_5` for `.top(5)`).
    package var name: String {
        switch self {
        case .count: "_count"
        case .sum: "_sum"
        case .stats: "_stats"
        case .approximateCountDistinct: "_approx_count_distinct"
        case .first: "_first"
        case .last: "_last"
        case .top(let n): "_top_\(n)"
        case .bottom(let n): "_bottom_\(n)"
        }
    }

    /// CouchDB's prefix matching of a reduce source (`couch_mrview:validate/2`,
    /// `couch_query_servers:builtin_reduce/5`): a source *starting with* a
    /// built-in's name is that built-in, so `"_sum\n"`, `"_count // comment"` and
    /// even `"_summary"` all match. Nil when the source does not start with "_"
    /// (it is then a JavaScript function; leading whitespace counts).
    ///
    /// `_top_N` and `_bottom_N` are the exception: all that follows the prefix
    /// must be an integer (Erlang's `binary_to_integer`: an optional sign, then
    /// decimal digits) from 1 to 100.
    ///
    /// Throws `ReduceDefinitionError` with CouchDB's message for any other source
    /// starting with "_", e.g. "`_frob` is not a supported reduce function.", and
    /// for a bad rank: "rank value must be between 1 and 100" or "invalid rank reducer".
    package init?(source: String) throws(ReduceDefinitionError) {
        let bytes = source.utf8
        guard bytes.first == UInt8(ascii: "_") else { return nil }
        // CouchDB tries the names in this order (couch_mrview:validate/2).
        for reducer in [BuiltinReducer.sum, .count, .stats, .approximateCountDistinct]
        where bytes.starts(with: reducer.name.utf8) {
            self = reducer
            return
        }
        for (prefix, make) in [("_top_", BuiltinReducer.top), ("_bottom_", BuiltinReducer.bottom)] where bytes.starts(with: prefix.utf8) {
            self = make(try Self.rank(Substring(source.utf8.dropFirst(prefix.utf8.count))))
            return
        }
        if bytes.starts(with: "_first".utf8) {
            self = .first
            return
        }
        if bytes.starts(with: "_last".utf8) {
            self = .last
            return
        }
        throw ReduceDefinitionError(reason: "`\(source)` is not a supported reduce function.")
    }

    /// `check_rank/1` in couch_mrview.erl.
    private static func rank(_ text: Substring) throws(ReduceDefinitionError) -> Int {
        var digits = text.utf8[...]
        var negative = false
        if let sign = digits.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw ReduceDefinitionError(reason: "invalid rank reducer")
        }
        // Past 3 significant digits the value is out of range whatever it is.
        let significant = digits.drop { $0 == UInt8(ascii: "0") }
        let value = significant.count > 3 ? Int.max : significant.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard !negative, value >= 1, value <= maximumRank else {
            throw ReduceDefinitionError(reason: "rank value must be between 1 and \(maximumRank)")
        }
        return value
    }

    /// Whether the reducer reads the rows' doc ids (`_first` and `_last` break
    /// ties between equal keys with them).
    package var readsIDs: Bool {
        switch self {
        case .first, .last: true
        default: false
        }
    }

    // MARK: Non-throwing API

    /// First-level reduce over rows (emitted key, value). Returns the partial.
    /// `_approx_count_distinct` reads only `keys`, the others only `values`.
    /// `_first` and `_last` also read `ids` (the rows' doc ids).
    package func reduce(keys: [JSONValue], ids: [String] = [], values: [JSONValue]) -> JSONValue {
        do { return try checkedReduce(keys: keys, ids: ids, values: values) } catch { return error.jsonValue }
    }

    /// Combines partials (rereduce).
    package func rereduce(_ partials: [JSONValue]) -> JSONValue {
        do { return try checkedRereduce(partials) } catch { return error.jsonValue }
    }

    /// The value shown to the user from a partial: the partial itself, except for
    /// `_approx_count_distinct`, whose final value is the estimate as a number.
    package func finalValue(_ partial: JSONValue) -> JSONValue {
        do { return try checkedFinalValue(partial) } catch { return error.jsonValue }
    }

    // MARK: Throwing API

    /// `reduce(keys:values:)`, throwing where CouchDB fails the reduce instead of
    /// returning a value.
    ///
    /// `keysSize`: for `_sum`'s overflow check, the size of the rows' keys and
    /// doc ids as Erlang terms, when the caller measured them instead of
    /// passing `keys` and `ids`.
    package func checkedReduce(keys: [JSONValue], ids: [String] = [], values: [JSONValue],
                               keysSize: Int? = nil) throws(BuiltinReduceFailure) -> JSONValue {
        switch self {
        case .sum:
            return BuiltinSum.checkOverflow(try BuiltinSum.sumRows(values)) {
                let keysSize = keysSize ?? zip(keys, ids + Array(repeating: "", count: max(0, keys.count - ids.count))).reduce(0) {
                    $0 + ErlangExternalSize.encoded($1.0) + $1.1.utf8.count
                }
                let rows = values.reduce(keysSize) { $0 + ErlangExternalSize.reduceRow(key: 0, idBytes: 0, value: ErlangExternalSize.encoded($1)) }
                return ErlangExternalSize.rowList(count: values.count, rows: rows)
            }
        case .first, .last:
            return BuiltinRank.firstOrLast(last: self == .last, keys: keys, ids: ids, values: values)
        case .top(let n):
            return BuiltinRank.ranked(values, n: n, descending: true)
        case .bottom(let n):
            return BuiltinRank.ranked(values, n: n, descending: false)
        case .count:
            return .number(Double(values.count))
        case .stats:
            return try BuiltinStats.stats(values)
        case .approximateCountDistinct:
            var filter = HyperLogLog()
            for key in keys { filter.insert(key) }
            return .string(filter.encoded)
        }
    }

    /// `rereduce(_:)`, throwing where CouchDB fails the rereduce.
    package func checkedRereduce(_ partials: [JSONValue]) throws(BuiltinReduceFailure) -> JSONValue {
        switch self {
        case .count:
            // CouchDB rereduces _count with _sum's code (without its overflow check).
            return try BuiltinSum.sumRows(partials)
        case .sum:
            return BuiltinSum.checkOverflow(try BuiltinSum.sumRows(partials)) {
                ErlangExternalSize.rowList(count: partials.count, rows: partials.reduce(0) {
                    $0 + ErlangExternalSize.rereduceRow(value: ErlangExternalSize.encoded($1))
                })
            }
        case .stats:
            return try BuiltinStats.stats(partials)
        case .approximateCountDistinct:
            var union = HyperLogLog()
            for partial in partials {
                union.merge(try HyperLogLog.decodePartial(partial))
            }
            return .string(union.encoded)
        case .first, .last:
            return try BuiltinRank.rereduceFirstOrLast(last: self == .last, partials)
        case .top(let n):
            return try BuiltinRank.rereduceRanked(partials, n: n, descending: true)
        case .bottom(let n):
            return try BuiltinRank.rereduceRanked(partials, n: n, descending: false)
        }
    }

    /// `finalValue(_:)`, throwing where CouchDB's finalize fails (only for a
    /// partial of `_approx_count_distinct` that is not one).
    package func checkedFinalValue(_ partial: JSONValue) throws(BuiltinReduceFailure) -> JSONValue {
        switch self {
        case .count, .sum, .stats, .top, .bottom:
            return partial
        case .first, .last:
            // The partial is `[key, id, value]`; CouchDB's `finalize` keeps the value.
            if case .array(let triple) = partial, triple.count == 3 { return triple[2] }
            return partial
        case .approximateCountDistinct:
            return .number(try HyperLogLog.decodePartial(partial).estimate)
        }
    }

    // MARK: CouchDB's texts

    /// `?SUMERROR` in couch_query_servers.erl, the `reason` of `_sum`'s error value.
    package static let sumErrorReason =
        "The _sum function requires that map values be numbers, arrays of numbers, or objects. "
        + "Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, "
        + "provided that the values for all fields are themselves numbers, arrays of numbers, or objects."

    /// The error value `_sum` returns (as the row's value) for a value it cannot add.
    package static func sumErrorValue(causedBy cause: JSONValue) -> JSONValue {
        .object([
            (key: "error", value: .string("builtin_reduce_error")),
            (key: "reason", value: .string(sumErrorReason)),
            (key: "caused_by", value: cause),
        ])
    }
}

/// A reduce definition CouchDB rejects (it answers 400 `invalid_design_doc`).
package struct ReduceDefinitionError: Error, Sendable, Equatable {
    package var reason: String

    package init(reason: String) {
        self.reason = reason
    }
}

/// A reduce that CouchDB fails rather than answering with an error value: the
/// Erlang exception's name (`invalid_value` for CouchDB's own `_stats` input
/// errors, `case_clause`, `function_clause` or `badmatch` where CouchDB's reducer
/// crashes) and its reason text.
package struct BuiltinReduceFailure: Error, Sendable, Equatable {
    package var error: String
    package var reason: String

    package init(error: String, reason: String) {
        self.error = error
        self.reason = reason
    }

    /// `{"error":…,"reason":…}`, the shape of CouchDB's HTTP error bodies.
    package var jsonValue: JSONValue {
        .object([(key: "error", value: .string(error)), (key: "reason", value: .string(reason))])
    }

    /// CouchDB's `throw({invalid_value, Msg})`.
    package static func invalidValue(_ message: [UInt8]) -> BuiltinReduceFailure {
        BuiltinReduceFailure(error: "invalid_value", reason: String(decoding: message, as: UTF8.self))
    }

    /// An Erlang `case_clause` crash on `term`.
    package static func caseClause(_ term: ErlangTerm) -> BuiltinReduceFailure {
        BuiltinReduceFailure(error: "case_clause", reason: String(decoding: ErlangFormat.print(term, column: 1), as: UTF8.self))
    }
}

// MARK: - _sum

/// `builtin_sum_rows/2`, `sum_values/2`, `sum_objects/2` and `sum_arrays/2`.
package enum BuiltinSum {
    private enum Thrown: Error {
        /// `throw({builtin_reduce_error, Obj})`: an error value met as input, passed on as it is.
        case builtinReduceError(JSONValue)
        /// `throw({invalid_value, ?SUMERROR, Cause})`.
        case invalidValue(cause: JSONValue)
        /// An Erlang error that `builtin_sum_rows` does not catch.
        case crash(BuiltinReduceFailure)
    }

    /// `check_sum_overflow/3`: a sum that does not shrink fast enough
    /// (``ReduceLimit/builtinSum``) becomes CouchDB's error value
    /// `{"error":"builtin_reduce_error","reason":"Reduce output must shrink more rapidly: …"}`.
    /// `inputSize` (the reduce's input as an Erlang term) is measured only
    /// when the sum is large enough to matter.
    package static func checkOverflow(_ sum: JSONValue, inputSize: () -> Int) -> JSONValue {
        switch sum {
        case .array, .object: break
        default: return sum
        }
        let outputSize = ErlangExternalSize.term(sum)
        guard outputSize > Int(ReduceLimit.builtinSum.threshold ?? 0) else { return sum }
        let input = inputSize()
        guard ReduceLimit.builtinSum.isExceeded(inputLength: input, outputLength: outputSize) else { return sum }
        return .object([
            (key: "error", value: .string("builtin_reduce_error")),
            (key: "reason", value: .string(ReduceLimit.overflowMessage(inputSize: input, outputSize: outputSize))),
        ])
    }

    /// Folds `sum_values` over the values from the integer 0. The first error
    /// ends the fold and becomes the result.
    package static func sumRows(_ values: [JSONValue]) throws(BuiltinReduceFailure) -> JSONValue {
        var accumulator: JSONValue = .number(0)
        for value in values {
            do {
                accumulator = try sumValues(value, accumulator)
            } catch {
                switch error {
                case .builtinReduceError(let object): return object
                case .invalidValue(let cause): return BuiltinReducer.sumErrorValue(causedBy: cause)
                case .crash(let failure): throw failure
                }
            }
        }
        return accumulator
    }

    private static func sumValues(_ value: JSONValue, _ accumulator: JSONValue) throws(Thrown) -> JSONValue {
        switch (value, accumulator) {
        case let (.number(v, _), .number(a, _)):
            return .number(a + v)
        case let (.array(v), .array(a)):
            return try sumArrays(a, v)
        case let (.number(v, _), .array(a)):
            return try sumArrays(a, [.number(v)])
        case let (.array(v), .number(a, _)):
            return try sumArrays([.number(a)], v)
        case let (.object(members), _):
            if let error = members.first(where: { JSONValue.sameBytes($0.key, "error") }) {
                guard case .string(let text) = error.value, JSONValue.sameBytes(text, "builtin_reduce_error") else {
                    // `case lists:keyfind(<<"error">>, …) of` has no clause for other values.
                    throw .crash(.caseClause(.tuple([.binary(Array("error".utf8)), ErlangTerm(error.value)])))
                }
                throw .builtinReduceError(value)
            }
            switch accumulator {
            case .number(0, _):
                // The integer 0 (the fold's start): the object is taken as it is, unchecked.
                return value
            case .object(let accumulatorMembers):
                return .object(try sumObjects(sorted(members), sorted(accumulatorMembers)))
            default:
                // `case Acc of 0 -> …; {AccProps} -> … end` has no clause for these.
                throw .crash(.caseClause(ErlangTerm(accumulator)))
            }
        default:
            throw .invalidValue(cause: value)
        }
    }

    /// `lists:sort/1` on an object's `{Key, Value}` pairs: by key bytes, then by value in term order.
    private static func sorted(_ members: [(key: String, value: JSONValue)]) -> [(key: String, value: JSONValue)] {
        members.enumerated().sorted { a, b in
            let keyOrder = JSONValue.compareBytes(a.element.key, b.element.key)
            if keyOrder != 0 { return keyOrder < 0 }
            let valueOrder = JSONValue.erlangOrder(a.element.value, b.element.value)
            if valueOrder != 0 { return valueOrder < 0 }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// Merges two key-sorted member lists, summing the values of equal keys
    /// (`sum_values(Value's, Acc's)`) and keeping the others as they are.
    private static func sumObjects(
        _ values: [(key: String, value: JSONValue)],
        _ accumulators: [(key: String, value: JSONValue)]
    ) throws(Thrown) -> [(key: String, value: JSONValue)] {
        var result: [(key: String, value: JSONValue)] = []
        result.reserveCapacity(values.count + accumulators.count)
        var i = 0, j = 0
        while i < values.count && j < accumulators.count {
            let order = JSONValue.compareBytes(values[i].key, accumulators[j].key)
            if order == 0 {
                result.append((key: values[i].key, value: try sumValues(values[i].value, accumulators[j].value)))
                i += 1
                j += 1
            } else if order < 0 {
                result.append(values[i])
                i += 1
            } else {
                result.append(accumulators[j])
                j += 1
            }
        }
        result += values[i...]
        result += accumulators[j...]
        return result
    }

    /// Element-wise sum, the shorter padded by the longer's tail. A pair that is
    /// not two numbers throws with the *first* list's remainder from that pair
    /// on as the cause, as CouchDB's `sum_arrays(Else, _) -> throw_sum_error(Else)`.
    private static func sumArrays(_ xs: [JSONValue], _ ys: [JSONValue]) throws(Thrown) -> JSONValue {
        var result: [JSONValue] = []
        result.reserveCapacity(max(xs.count, ys.count))
        var index = 0
        while index < xs.count && index < ys.count {
            guard case .number(let x, _) = xs[index], case .number(let y, _) = ys[index] else {
                throw .invalidValue(cause: .array(Array(xs[index...])))
            }
            result.append(.number(x + y))
            index += 1
        }
        result += xs[index...]
        result += ys[index...]
        return .array(result)
    }
}

// MARK: - _stats

/// `builtin_stats/2`, `stat_values/2`, `build_initial_accumulator/1`,
/// `unpack_stats/1`, `pack_stats/1` and `get_number/2`.
package enum BuiltinStats {
    package struct Tuple {
        package var sum, count, min, max, sumsqr: ErlangNumber

        package init(sum: ErlangNumber, count: ErlangNumber, min: ErlangNumber, max: ErlangNumber, sumsqr: ErlangNumber) {
            self.sum = sum
            self.count = count
            self.min = min
            self.max = max
            self.sumsqr = sumsqr
        }

        /// `{X, 1, X, X, X * X}`.
        package init(single x: ErlangNumber) {
            self.init(sum: x, count: .one, min: x, max: x, sumsqr: x * x)
        }

        package var term: ErlangTerm { .tuple([sum.term, count.term, min.term, max.term, sumsqr.term]) }
    }

    /// The accumulator: a stats tuple, or a list of accumulators for array values.
    package indirect enum Accumulator {
        case tuple(Tuple)
        case list([Accumulator])
    }

    /// A `stat_values` input: a JSON value, or one already unpacked to a tuple.
    private enum Input {
        case json(JSONValue)
        case tuple(Tuple)

        var term: ErlangTerm {
            switch self {
            case .json(let value): return ErlangTerm(value)
            case .tuple(let tuple): return tuple.term
            }
        }
    }

    package static let statErrorPrefix = "The _stats function requires that map values be numbers or arrays of numbers, not '"

    package static func stats(_ values: [JSONValue]) throws(BuiltinReduceFailure) -> JSONValue {
        guard let first = values.first else {
            return pack(.tuple(Tuple(sum: .zero, count: .zero, min: .zero, max: .zero, sumsqr: .zero)))
        }
        var accumulator = try initialAccumulator(first)
        for value in values.dropFirst() {
            accumulator = try statValues(.json(value), accumulator)
        }
        return pack(accumulator)
    }

    private static func initialAccumulator(_ value: JSONValue) throws(BuiltinReduceFailure) -> Accumulator {
        switch value {
        case .array(let elements):
            var accumulators: [Accumulator] = []
            accumulators.reserveCapacity(elements.count)
            for element in elements { accumulators.append(try initialAccumulator(element)) }
            return .list(accumulators)
        case .number(let x, _):
            return .tuple(Tuple(single: ErlangNumber(json: x)))
        case .object(let members):
            return .tuple(try unpack(members))
        default:
            throw .invalidValue(Array("non-numeric _stats input: ".utf8) + ErlangFormat.write(ErlangTerm(value)))
        }
    }

    private static func statValues(_ input: Input, _ accumulator: Accumulator) throws(BuiltinReduceFailure) -> Accumulator {
        switch (input, accumulator) {
        case let (.json(.array(values)), .list(accumulators)):
            // lists:zipwith/3
            var result: [Accumulator] = []
            result.reserveCapacity(values.count)
            for (value, elementAccumulator) in zip(values, accumulators) {
                result.append(try statValues(.json(value), elementAccumulator))
            }
            guard values.count == accumulators.count else {
                throw BuiltinReduceFailure(
                    error: "function_clause",
                    reason: "lists:zipwith/3: _stats arrays of different lengths (\(accumulators.count) and \(values.count))"
                )
            }
            return .list(result)
        case let (.json(.object(members)), _):
            return try statValues(.tuple(try unpack(members)), accumulator)
        case let (.json(.number(x, _)), _):
            return try statValues(.tuple(Tuple(single: ErlangNumber(json: x))), accumulator)
        case let (.tuple(v), .tuple(a)):
            return .tuple(Tuple(
                sum: v.sum + a.sum,
                count: v.count + a.count,
                min: .erlangMin(v.min, a.min),
                max: .erlangMax(v.max, a.max),
                sumsqr: v.sumsqr + a.sumsqr
            ))
        default:
            let prefix = Array(statErrorPrefix.utf8)
            let printed = ErlangFormat.print(input.term, column: prefix.count + 1)
            throw .invalidValue(prefix + printed + [UInt8(ascii: "'")])
        }
    }

    /// A pre-aggregated stats object's five numbers, looked up in this order.
    private static func unpack(_ members: [(key: String, value: JSONValue)]) throws(BuiltinReduceFailure) -> Tuple {
        func number(_ key: String) throws(BuiltinReduceFailure) -> ErlangNumber {
            guard let member = members.first(where: { JSONValue.sameBytes($0.key, key) }) else {
                let prefix = Array("user _stats input missing required field \(key) (".utf8)
                let printed = ErlangFormat.print(ErlangTerm.proplist(members), column: prefix.count + 1)
                throw .invalidValue(prefix + printed + [UInt8(ascii: ")")])
            }
            guard case .number(let x, _) = member.value else {
                throw .invalidValue(
                    Array("non-numeric _stats input received for \(key): ".utf8) + ErlangFormat.write(ErlangTerm(member.value))
                )
            }
            return ErlangNumber(json: x)
        }
        return Tuple(
            sum: try number("sum"),
            count: try number("count"),
            min: try number("min"),
            max: try number("max"),
            sumsqr: try number("sumsqr")
        )
    }

    private static func pack(_ accumulator: Accumulator) -> JSONValue {
        switch accumulator {
        case .tuple(let t):
            return .object([
                (key: "sum", value: .number(t.sum.value)),
                (key: "count", value: .number(t.count.value)),
                (key: "min", value: .number(t.min.value)),
                (key: "max", value: .number(t.max.value)),
                (key: "sumsqr", value: .number(t.sumsqr.value)),
            ])
        case .list(let accumulators):
            return .array(accumulators.map(pack))
        }
    }
}
