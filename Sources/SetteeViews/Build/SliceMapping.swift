import Foundation
import SetteeCore
import SetteeStorage

/// One worker's mapping of one slice of a ``DocumentBatch`` (see
/// ``MapStage``): the slice's documents through the views' map functions
/// into a ``MappedBatch``.
///
/// A struct whose mutating methods share its buffers, rather than nested
/// functions capturing local variables: captured variables are boxed, and
/// every access to them is checked for exclusivity at run time, per row and
/// per document; a struct's own stored properties are checked when compiled.
struct SliceMapping {
    /// Views of one document form: the views they are (by position) and their compiled map functions.
    typealias Group = (members: [(target: Int, function: CompiledFunction)], functions: [CompiledFunction])

    private static let designPrefix = Array("_design/".utf8)

    private let documents: DocumentBatch
    /// The batch's JSON and ids (`documents.json`, `documents.ids.bytes`), valid while this maps.
    private let json: UnsafeRawBufferPointer
    private let ids: UnsafeRawBufferPointer
    /// Per view: the sequence its index is at (it maps only documents changed after it).
    private let sequences: [UInt64]
    private let collations: [CollationMode]
    private let includeDesign: [Bool]
    private let partitioned: [Bool]
    private let context: any FunctionRunner
    private let plainGroup: Group
    private let sequencedGroup: Group
    private let indexers: [(target: Int, indexer: any Indexer)]
    /// Where a document's members are is found only for indexers that read them.
    private let locatesMembers: Bool
    private let emitter = Emitter()

    /// The rows mapped so far.
    private(set) var output = MappedBatch()
    private var fullKey: [UInt8] = []
    private var withLocalSequence: [UInt8] = []
    private var emitCounts: [UInt32] = []
    private var equalKeyScratch: [Int] = []
    private var members: [Int32] = []
    /// The views mapping a document are usually all of its form's, or the
    /// same few (an index already past it leaves it out): each subset is
    /// made once per slice, not per document.
    private var subsets: [[UInt64: Group]] = [[:], [:]]

    /// Compiles the JavaScript views' map functions on `context`.
    init(views: [ViewDefinition], collations: [CollationMode], includeDesign: [Bool], partitioned: [Bool],
         documents: DocumentBatch, json: UnsafeRawBufferPointer, ids: UnsafeRawBufferPointer,
         since sequences: [UInt64], context: any FunctionRunner) throws {
        var plain: [(target: Int, function: CompiledFunction)] = []
        var sequenced: [(target: Int, function: CompiledFunction)] = []
        var indexers: [(target: Int, indexer: any Indexer)] = []
        for (index, view) in views.enumerated() {
            if let swift = view.swift {
                indexers.append((index, swift.indexer))
                continue
            }
            let function = try context.compile(view.map, name: "\(view.designDocument)/\(view.name) map", library: view.library.map { $0.jsonText })
            if view.localSequence { sequenced.append((index, function)) } else { plain.append((index, function)) }
        }
        self.documents = documents
        self.json = json
        self.ids = ids
        self.sequences = sequences
        self.collations = collations
        self.includeDesign = includeDesign
        self.partitioned = partitioned
        self.context = context
        plainGroup = (plain, plain.map(\.function))
        sequencedGroup = (sequenced, sequenced.map(\.function))
        self.indexers = indexers
        locatesMembers = indexers.contains { !($0.indexer is any RawJSONIndexer) }
    }

    /// Maps the documents of `slice` into ``output``.
    mutating func map(_ slice: Range<Int>) throws {
        output.documentRows.reserveCapacity(slice.count + 1)
        output.bytes.reserveCapacity(slice.count * 128)
        output.rows.reserveCapacity(slice.count * sequences.count)
        for document in slice {
            defer { output.documentRows.append(output.rows.count) }
            let range = documents.jsonRange(document)
            guard !range.isEmpty else { continue }
            let id = UnsafeRawBufferPointer(rebasing: ids[documents.ids.range(document)])
            let isDesign = id.starts(with: Self.designPrefix)
            // Functions grouped by the document form they need: one parse per document and form.
            if !plainGroup.members.isEmpty { try map(document, form: 0, group: plainGroup, id: id, isDesign: isDesign) }
            if !sequencedGroup.members.isEmpty { try map(document, form: 1, group: sequencedGroup, id: id, isDesign: isDesign) }
            if !indexers.isEmpty && !isDesign { try mapSwift(document, range: range, id: id) }
        }
    }

    /// Adds a row a map function emitted for `target` (its `emitIndex`th for the document).
    private mutating func addRow(target: Int, emitIndex: UInt32, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                                 id: UnsafeRawBufferPointer) throws {
        fullKey.removeAll(keepingCapacity: true)
        // A partitioned view's rows are kept by partition, the prefix part of the encoded key.
        if partitioned[target] { PartitionKey.append(partitionOf: id, to: &fullKey) }
        try CollationKey.append(json: key, mode: collations[target], to: &fullKey)
        let encodedLength = fullKey.count
        IndexRow.appendFullKeySuffix(id: id, emitIndex: emitIndex, to: &fullKey)
        let keyStart = output.bytes.count
        IndexRow.appendStoredKey(forFullKey: fullKey, to: &output.bytes)
        let valueStart = output.bytes.count
        IndexRow.appendValue(fullKey: fullKey, encodedKeyLength: encodedLength,
                             keyJSON: key, valueJSON: value, to: &output.bytes)
        output.rows.append(MappedRow(
            target: Int32(target), keyStart: Int32(keyStart), keyLength: Int32(valueStart - keyStart),
            valueLength: Int32(output.bytes.count - valueStart)))
    }

    /// The views of `group` that map the document: those whose index is
    /// behind it (`sequence`), and that take design documents when it is one.
    private mutating func subset(of group: Group, form: Int, sequence: UInt64, isDesign: Bool) -> Group {
        let sequences = sequences, includeDesign = includeDesign
        func maps(_ target: Int) -> Bool { sequences[target] < sequence && (!isDesign || includeDesign[target]) }
        guard group.members.count <= 64 else {
            let members = group.members.filter { maps($0.target) }
            return (members, members.map(\.function))
        }
        var mask: UInt64 = 0
        for (position, member) in group.members.enumerated() where maps(member.target) { mask |= 1 << position }
        if mask == 0 { return ([], []) }
        if let known = subsets[form][mask] { return known }
        let members = group.members.indices.filter { mask & 1 << $0 != 0 }.map { group.members[$0] }
        let made = (members: members, functions: members.map(\.function))
        subsets[form][mask] = made
        return made
    }

    /// Maps one document with the views of `group` that map it: all of
    /// them (the usual case, with no subset to look up) or some.
    private mutating func map(_ document: Int, form: Int, group: Group, id: UnsafeRawBufferPointer, isDesign: Bool) throws {
        let sequence = documents.sequences[document]
        if group.members.allSatisfy({ sequences[$0.target] < sequence && (!isDesign || includeDesign[$0.target]) }) {
            try map(document, form: form, active: group.members, functions: group.functions, id: id)
        } else {
            let (active, functions) = subset(of: group, form: form, sequence: sequence, isDesign: isDesign)
            if !active.isEmpty { try map(document, form: form, active: active, functions: functions, id: id) }
        }
    }

    /// Maps one document with the views of one form that map it (`active`)
    /// and adds their rows.
    private mutating func map(_ document: Int, form: Int, active: [(target: Int, function: CompiledFunction)],
                              functions: [CompiledFunction], id: UnsafeRawBufferPointer) throws {
        let text = UnsafeRawBufferPointer(rebasing: json[documents.jsonRange(document)])
        emitCounts.removeAll(keepingCapacity: true)
        emitCounts.append(contentsOf: repeatElement(0, count: active.count))
        let firstRow = output.rows.count
        defer { output.orderEqualKeysByValue(fromRow: firstRow, scratch: &equalKeyScratch) }
        do {
            if form == 1 {
                withLocalSequence.removeAll(keepingCapacity: true)
                withLocalSequence.append(contentsOf: text.dropLast())
                withLocalSequence.append(contentsOf: #","_local_seq":\#(documents.sequences[document])}"#.utf8)
                // Moved out while it is read: the rows are added meanwhile.
                let withSequence = withLocalSequence
                defer { withLocalSequence = withSequence }
                withLocalSequence = []
                try withSequence.withUnsafeBytes { try mapRows($0, document: document, active: active, functions: functions, id: id) }
            } else {
                try mapRows(text, document: document, active: active, functions: functions, id: id)
            }
        } catch let error as JavaScriptError where !error.kind.isEngineFailure {
            // The engine could not take this document (too large or too deep
            // to parse within its bounds): its error, not the build's.
            for member in active { output.errors.append((document, member.target, error)) }
        }
    }

    /// Runs the functions on one form of a document (`text`) and adds their rows.
    private mutating func mapRows(_ text: UnsafeRawBufferPointer, document: Int, active: [(target: Int, function: CompiledFunction)],
                                  functions: [CompiledFunction], id: UnsafeRawBufferPointer) throws {
        let context = context
        try context.map(
            text, functions: functions,
            row: { function, key, value in
                try addRow(target: active[function].target, emitIndex: emitCounts[function], key: key, value: value, id: id)
                emitCounts[function] += 1
            },
            failure: { function, error in
                // The engine's failure is the build's, not the document's: skipping
                // the document would leave its rows out for good.
                guard !error.kind.isEngineFailure else { throw error }
                output.errors.append((document, active[function].target, error))
            })
    }

    /// Maps one document with the Swift views that map it (those whose
    /// index is behind it; design documents, never).
    private mutating func mapSwift(_ document: Int, range: Range<Int>, id: UnsafeRawBufferPointer) throws {
        let sequence = documents.sequences[document]
        let emitter = emitter
        var indexed: IndexedDocument?
        for (target, indexer) in indexers where sequences[target] < sequence {
            let firstRow = output.rows.count
            defer { output.orderEqualKeysByValue(fromRow: firstRow, scratch: &equalKeyScratch) }
            if indexed == nil {
                // The table's room is reused: the last document's view of it is gone by now.
                members.removeAll(keepingCapacity: true)
                if locatesMembers { try JSONObjectScanner.memberTable(of: UnsafeRawBufferPointer(rebasing: json[range]), into: &members) }
                indexed = IndexedDocument(storage: documents.json, range: range, members: members,
                                          id: String(decoding: id, as: UTF8.self), sequence: sequence)
            }
            emitter.reset()
            do {
                try indexer.map(indexed!, emitter)
            } catch {
                // As a JavaScript map function that throws: no rows, the error logged and counted.
                output.errors.append((document, target, JavaScriptError(kind: .runtime, message: "\(error)")))
                continue
            }
            var emitIndex: UInt32 = 0
            try emitter.forEachRow { key, value in
                try addRow(target: target, emitIndex: emitIndex, key: key, value: value, id: id)
                emitIndex += 1
            }
        }
    }
}
