import Foundation
package import SetteeCore
import SetteeStorage
package import Logging

/// Reduces a view's rows with its reduce function: a built-in, natively, a
/// Swift view's function, or JavaScript on a worker — in chunks, whose results are then rereduced, as
/// CouchDB does. A class, as every chunk being built holds one (a stored
/// reductions pass makes one builder per 32 rows): passing it on costs one
/// reference, not a copy of its parts.
package final class Reducer: Sendable {
    private enum Kind {
        case builtin(BuiltinReducer)
        case javascript(source: String, name: String)
        /// A view written in Swift's reduce function (``ReduceFunction/swift(_:)``).
        case swift(@Sendable (_ keys: [(key: JSONValue, id: String)]?, _ values: [JSONValue], _ rereduce: Bool) throws -> JSONValue, name: String)
    }

    private let kind: Kind
    private let workers: any FunctionWorkers
    private let chunk: Int
    /// Whether the JavaScript function may read its keys: one that provably
    /// never does (``readsKeys(_:)``) is passed `null` for them.
    private let passesKeys: Bool
    /// The index update whose chunks this reducer computes: its JavaScript
    /// calls count there as reducing time.
    private let cpu: IndexingCPU?
    /// Where a JavaScript reduce function's exceptions are logged.
    private let logger: Logger?

    /// Rows being reduced into one value.
    package struct Accumulator: Sendable {
        package fileprivate(set) var rowCount = 0
        fileprivate var keys: [JSONValue] = []
        fileprivate var ids: [String] = []
        /// For `_sum`'s overflow check: the rows' keys and ids as Erlang terms,
        /// estimated from the keys' JSON text (the keys are not parsed, nor the ids read).
        fileprivate var keysSize = 0
        fileprivate var values: [JSONValue] = []
        fileprivate var partials: [JSONValue] = []
        fileprivate var keysText: [UInt8] = []
        /// The length `keysText` has, or would have when the keys are not passed.
        fileprivate var keysLength = 0
        fileprivate var valuesText: [UInt8] = []
        fileprivate var chunkRows = 0
        fileprivate var partialTexts: [String] = []
    }

    package init(source: String, view: ViewDefinition, workers: any FunctionWorkers, chunk: Int, cpu: IndexingCPU? = nil,
         logger: Logger? = nil) throws {
        self.logger = logger
        if source == ReduceFunction.swiftSource, case .swift(let function)? = view.indexer?.reduce {
            kind = .swift(function, name: view.name)
            passesKeys = true
        } else if let builtin = try BuiltinReducer(source: source) {
            kind = .builtin(builtin)
            passesKeys = false
        } else {
            kind = .javascript(source: source, name: "\(view.designDocument)/\(view.name) reduce")
            passesKeys = source == view.reduce ? view.reduceReadsKeys : Self.readsKeys(source)
        }
        self.workers = workers
        self.chunk = chunk
        self.cpu = cpu
    }

    /// Runs `body` (JavaScript calls, on a worker), counted as the update's
    /// reducing time when this reducer belongs to one.
    private func measured<T>(_ body: () throws -> T) rethrows -> T {
        guard let cpu else { return try body() }
        return try cpu.measure(.reducing, body)
    }

    /// Whether the reduce function is JavaScript (its calls run on a worker).
    package var isJavaScript: Bool {
        if case .javascript = kind { return true }
        return false
    }

    /// Whether the reducer uses the ids given to ``add(key:id:value:to:)``
    /// (JavaScript, `_first` and `_last`): callers may pass an empty one otherwise.
    package var readsIDs: Bool {
        switch kind {
        case .javascript, .swift: true
        case .builtin(let reducer): reducer.readsIDs
        }
    }

    package func makeAccumulator() -> Accumulator {
        Accumulator()
    }

    package func add(key: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, to accumulator: inout Accumulator) throws {
        accumulator.rowCount += 1
        accumulator.chunkRows += 1
        switch kind {
        case .builtin(let reducer):
            switch reducer {
            case .approximateCountDistinct: accumulator.keys.append(try JSONParser.parse(key))
            // _count reads neither keys nor values: `chunkRows` counts them.
            case .count: break
            case .sum:
                accumulator.values.append(try JSONParser.parse(value))
                accumulator.keysSize += key.count + 3
            case .stats, .top, .bottom: accumulator.values.append(try JSONParser.parse(value))
            case .first, .last:
                accumulator.keys.append(try JSONParser.parse(key))
                accumulator.ids.append(String(decoding: id, as: UTF8.self))
                accumulator.values.append(try JSONParser.parse(value))
            }
            if accumulator.chunkRows >= chunk { try reduceRows(reducer, &accumulator) }
        case .swift:
            accumulator.keys.append(try JSONParser.parse(key))
            accumulator.ids.append(String(decoding: id, as: UTF8.self))
            accumulator.values.append(try JSONParser.parse(value))
            if accumulator.chunkRows >= chunk { try reduceSwiftRows(&accumulator) }
        case .javascript:
            let utf8ID = id.assumingMemoryBound(to: UInt8.self)
            if passesKeys {
                accumulator.keysText.append(accumulator.keysText.isEmpty ? UInt8(ascii: "[") : UInt8(ascii: ","))
                accumulator.keysText.append(UInt8(ascii: "["))
                accumulator.keysText.append(contentsOf: key)
                accumulator.keysText.append(UInt8(ascii: ","))
                JSONWriter.writeString(utf8: utf8ID, into: &accumulator.keysText)
                accumulator.keysText.append(UInt8(ascii: "]"))
                accumulator.keysLength = accumulator.keysText.count
            } else {
                // `[` or `,`, then `[key,"id"]`.
                accumulator.keysLength += 4 + key.count + JSONWriter.stringLength(utf8: utf8ID)
            }
            accumulator.valuesText.append(accumulator.valuesText.isEmpty ? UInt8(ascii: "[") : UInt8(ascii: ","))
            accumulator.valuesText.append(contentsOf: value)
            if accumulator.chunkRows >= chunk { try reduceChunk(&accumulator) }
        }
    }

    /// Adds a stored partial reduction (see ``StoredReductions``) of `rows` rows.
    package func add(partial: UnsafeRawBufferPointer, rows: Int, to accumulator: inout Accumulator) throws {
        accumulator.rowCount += rows
        switch kind {
        case .builtin(let reducer):
            try reduceRows(reducer, &accumulator)
            accumulator.partials.append(try JSONParser.parse(partial))
        case .swift:
            try reduceSwiftRows(&accumulator)
            accumulator.partials.append(try JSONParser.parse(partial))
        case .javascript:
            if accumulator.chunkRows > 0 { try reduceChunk(&accumulator) }
            accumulator.partialTexts.append(String(decoding: partial, as: UTF8.self))
        }
    }

    /// The reduction of everything added, as JSON text.
    package func finish(_ accumulator: inout Accumulator) throws -> String {
        switch kind {
        case .builtin(let reducer):
            let partial = try builtinPartial(reducer, &accumulator)
            return try checked { () throws(BuiltinReduceFailure) in try reducer.checkedFinalValue(partial) }.jsonText
        case .swift:
            return try swiftPartial(&accumulator).jsonText
        case .javascript:
            return try partial(&accumulator)
        }
    }

    /// The reduction of everything added before a built-in's final step (what
    /// rereduce combines), as JSON text.
    package func partial(_ accumulator: inout Accumulator) throws -> String {
        try partial(&accumulator, in: nil)
    }

    /// The partials of many accumulators, computed together: a JavaScript
    /// reducer makes its calls in a few turns (what rebuilding an index's
    /// chunks does per batch of chunks) instead of one turn each, shared among
    /// the workers when there are many.
    package func partials(_ accumulators: [Accumulator]) throws -> [Result<String, any Error>] {
        switch kind {
        case .builtin, .swift:
            return accumulators.map { accumulator in
                var accumulator = accumulator
                return Result { try partial(&accumulator, in: nil) }
            }
        case .javascript:
            @Sendable func reduce(_ run: ArraySlice<Accumulator>, in context: any FunctionRunner) -> [Result<String, any Error>] {
                run.map { accumulator in
                    var accumulator = accumulator
                    return Result { try partial(&accumulator, in: context) }
                }
            }
            let pieces = min(workers.count * 4, accumulators.count / Self.callsPerPiece)
            guard pieces > 1 else {
                return try workers.run { context in measured { reduce(accumulators[...], in: context) } }
            }
            let size = (accumulators.count + pieces - 1) / pieces
            return try workers.runShared(pieces: pieces) { piece, context in
                self.measured { reduce(accumulators[min(piece * size, accumulators.count)..<min((piece + 1) * size, accumulators.count)], in: context) }
            }.flatMap { $0 }
        }
    }

    /// The fewest calls worth a turn of their own on a worker.
    private static let callsPerPiece = 32

    /// `context`: the worker's context when already on its thread.
    private func partial(_ accumulator: inout Accumulator, in context: (any FunctionRunner)?) throws -> String {
        switch kind {
        case .builtin(let reducer):
            return try builtinPartial(reducer, &accumulator).jsonText
        case .swift:
            return try swiftPartial(&accumulator).jsonText
        case .javascript(let source, let name):
            if accumulator.chunkRows > 0 { try reduceChunk(&accumulator, in: context) }
            if accumulator.partialTexts.count == 1 { return accumulator.partialTexts[0] }
            // CouchDB's os_rereduce (get_overflow_error): an overflowed partial is the result.
            if let overflow = accumulator.partialTexts.first(where: { Self.overflowReason($0) != nil }) { return overflow }
            let values = "[" + accumulator.partialTexts.joined(separator: ",") + "]"
            return try call(source: source, name: name, keys: "null", keysLength: 4, values: values, rereduce: true, in: context)
        }
    }

    private func builtinPartial(_ reducer: BuiltinReducer, _ accumulator: inout Accumulator) throws -> JSONValue {
        try reduceRows(reducer, &accumulator)
        let partials = accumulator.partials
        return partials.count == 1 ? partials[0] : try checked { () throws(BuiltinReduceFailure) in try reducer.checkedRereduce(partials) }
    }

    /// Reduces the rows added since the last partial into one more partial.
    private func reduceRows(_ reducer: BuiltinReducer, _ accumulator: inout Accumulator) throws {
        guard accumulator.chunkRows > 0 else { return }
        if case .count = reducer {
            accumulator.partials.append(.number(Double(accumulator.chunkRows)))
        } else {
            accumulator.partials.append(try checked { () throws(BuiltinReduceFailure) in try reducer.checkedReduce(keys: accumulator.keys, ids: accumulator.ids, values: accumulator.values,
                                                                                                            keysSize: accumulator.keysSize) })
        }
        accumulator.keysSize = 0
        accumulator.keys.removeAll(keepingCapacity: true)
        accumulator.ids.removeAll(keepingCapacity: true)
        accumulator.values.removeAll(keepingCapacity: true)
        accumulator.chunkRows = 0
    }

    /// The reduction of a Swift reduce function's rows and partials: the one
    /// partial as it is, as JavaScript's are, or their rereduce.
    private func swiftPartial(_ accumulator: inout Accumulator) throws -> JSONValue {
        try reduceSwiftRows(&accumulator)
        let partials = accumulator.partials
        if partials.count == 1 { return partials[0] }
        return try callSwift(keys: nil, values: partials, rereduce: true)
    }

    /// Reduces the rows added since the last partial with the Swift reduce function.
    private func reduceSwiftRows(_ accumulator: inout Accumulator) throws {
        guard accumulator.chunkRows > 0 else { return }
        let keys = zip(accumulator.keys, accumulator.ids).map { (key: $0, id: $1) }
        accumulator.partials.append(try callSwift(keys: keys, values: accumulator.values, rereduce: false))
        accumulator.keys.removeAll(keepingCapacity: true)
        accumulator.ids.removeAll(keepingCapacity: true)
        accumulator.values.removeAll(keepingCapacity: true)
        accumulator.chunkRows = 0
    }

    /// Calls the Swift reduce function; an error it throws fails the query
    /// (as a ``QueryError``, which stored chunks keep for queries reading them).
    private func callSwift(keys: [(key: JSONValue, id: String)]?, values: [JSONValue], rereduce: Bool) throws -> JSONValue {
        guard case .swift(let function, let name) = kind else { return .null }
        do {
            return try function(keys, values, rereduce)
        } catch let error as QueryError {
            throw error
        } catch {
            throw QueryError(error: "reduce_error", reason: "the reduce function of view \(name) threw: \(error)")
        }
    }

    /// A built-in reducer's failure fails the query, as in CouchDB.
    private func checked(_ body: () throws(BuiltinReduceFailure) -> JSONValue) throws -> JSONValue {
        do {
            return try body()
        } catch {
            throw QueryError(error: error.error, reason: error.reason)
        }
    }

    private func reduceChunk(_ accumulator: inout Accumulator, in context: (any FunctionRunner)? = nil) throws {
        guard case .javascript(let source, let name) = kind else { return }
        if passesKeys { accumulator.keysText.append(UInt8(ascii: "]")) }
        accumulator.valuesText.append(UInt8(ascii: "]"))
        let result = try call(
            source: source, name: name,
            keys: passesKeys ? String(decoding: accumulator.keysText, as: UTF8.self) : "null", keysLength: accumulator.keysLength + 1,
            values: String(decoding: accumulator.valuesText, as: UTF8.self), rereduce: false, in: context)
        accumulator.partialTexts.append(result)
        accumulator.keysText.removeAll(keepingCapacity: true)
        accumulator.keysLength = 0
        accumulator.valuesText.removeAll(keepingCapacity: true)
        accumulator.chunkRows = 0
    }

    /// `keysLength`: the length of the keys' JSON as CouchDB would send them
    /// (`reduce_limit` compares the output with the whole input).
    private func call(source: String, name: String, keys: String, keysLength: Int, values: String, rereduce: Bool,
                      in context: (any FunctionRunner)? = nil) throws -> String {
        func reduce(_ context: any FunctionRunner) throws -> CallResult {
            let function = try context.compile(source, name: name)
            return try context.reduce([function], keysJSON: keys, valuesJSON: values, rereduce: rereduce)
        }
        // On a worker already (`context`), its caller counts the time.
        let result = try context.map(reduce) ?? workers.run { context in try measured { try reduce(context) } }
        let output: String
        switch result.results[0] {
        case .success(let text):
            output = text
        case .failure(let error):
            // As CouchDB's views.js (runReduce, handleViewError): an exception is
            // logged and the reduction is null; only a fatal one fails the query.
            guard Self.reducesToNull(error) else { throw error }
            logger?.info("reduce function raised an exception; its reduction is null", metadata: [
                "view": "\(name)", "error": "function raised exception \(error.thrownSource.isEmpty ? error.message : error.thrownSource)",
            ])
            output = "null"
        }
        // CouchDB's reduce_limit: a reduction that does not shrink is a mistake,
        // which CouchDB shows as the group's row (os_reduce, os_rereduce).
        let inputSize = keysLength + values.utf8.count + 3
        if ReduceLimit.couchDBDefault.isExceeded(inputLength: inputSize, outputLength: output.utf8.count) {
            return Self.overflowPartial(ReduceLimit.overflowMessage(inputSize: inputSize, outputSize: output.utf8.count))
        }
        return output
    }

    /// The partial standing for a reduction over `reduce_limit`: CouchDB's
    /// `{[{reduce_overflow_error, Msg}]}`, spelt as JSON (a reduce function
    /// returning exactly this object would be taken for one).
    package static func overflowPartial(_ reason: String) -> String {
        var out = Array(overflowPrefix.utf8)
        JSONWriter.writeString(reason, into: &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    private static let overflowPrefix = #"{"reduce_overflow_error":"#

    /// The reason of an overflowed partial (see ``overflowPartial(_:)``), or nil.
    package static func overflowReason(_ partial: String) -> String? {
        guard partial.utf8.starts(with: overflowPrefix.utf8), case .object(let members)? = try? JSONValue(parsing: partial),
              members.count == 1, case .string(let reason) = members[0].value else { return nil }
        return reason
    }

    /// Whether CouchDB's `handleViewError` only logs this exception: any
    /// thrown value except `"fatal_error"`, `["fatal", …]` and an InternalError
    /// (too much recursion). Timeouts and memory exhaustion fail the query.
    package static func reducesToNull(_ error: JavaScriptError) -> Bool {
        guard error.kind == .runtime else { return false }
        return error.message != "fatal_error" && !error.message.hasPrefix(#"["fatal""#) && !error.message.hasPrefix("InternalError: ")
    }

    // MARK: Reading the source

    /// Whether a JavaScript reduce function may read its first parameter, the
    /// keys. False only when the source is `function [name](keys, …` and that
    /// parameter's name appears nowhere else in it as a word — nor do
    /// `arguments`, `eval` or `Function`, nor any `\u` escape (identifiers may
    /// be spelled with them). Such a function cannot tell what it was passed
    /// for keys, so it is passed `null`, sparing the keys' JSON on both sides
    /// (`function (keys, values, rereduce) { return sum(values); }`).
    package static func readsKeys(_ source: String) -> Bool {
        let text = Array(source.utf8)
        func isWordByte(_ byte: UInt8) -> Bool {
            byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
        /// The index after spaces and comments from `index`.
        func skipSpace(_ index: Int) -> Int {
            var index = index
            while index < text.count {
                if text[index] == UInt8(ascii: " ") || (text[index] >= 0x09 && text[index] <= 0x0D) {
                    index += 1
                } else if text[index...].starts(with: "//".utf8) {
                    while index < text.count, text[index] != 0x0A { index += 1 }
                } else if text[index...].starts(with: "/*".utf8) {
                    index += 2
                    while index < text.count, !text[index...].starts(with: "*/".utf8) { index += 1 }
                    index += 2
                } else {
                    break
                }
            }
            return index
        }
        /// The word starting at `index` (empty if none).
        func word(at index: Int) -> Range<Int> {
            var end = index
            while end < text.count, isWordByte(text[end]) { end += 1 }
            return index..<end
        }
        // The header: `function`, maybe a name, `(`, the keys parameter, then `,` or `)`.
        var index = skipSpace(0)
        guard text[word(at: index)].elementsEqual("function".utf8) else { return true }
        index = skipSpace(index + 8)
        index = skipSpace(word(at: index).upperBound)
        guard index < text.count, text[index] == UInt8(ascii: "(") else { return true }
        index = skipSpace(index + 1)
        let parameter = word(at: index)
        guard !parameter.isEmpty, !(text[index] >= UInt8(ascii: "0") && text[index] <= UInt8(ascii: "9")) else { return true }
        let after = skipSpace(parameter.upperBound)
        guard after < text.count, text[after] == UInt8(ascii: ",") || text[after] == UInt8(ascii: ")") else { return true }
        // Every other word of the source.
        let name = text[parameter]
        var position = 0
        while position < text.count {
            if text[position] == UInt8(ascii: "\\") && position + 1 < text.count && text[position + 1] == UInt8(ascii: "u") { return true }
            guard isWordByte(text[position]) else {
                position += 1
                continue
            }
            let found = word(at: position)
            if found != parameter {
                let spelled = text[found]
                if spelled.elementsEqual(name) || spelled.elementsEqual("arguments".utf8) || spelled.elementsEqual("eval".utf8)
                    || spelled.elementsEqual("Function".utf8) {
                    return true
                }
            }
            position = found.upperBound
        }
        return false
    }
}
