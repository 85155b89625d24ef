import Foundation

/// A fixed set of ``JavaScriptWorker``s, one per core by default, that map
/// documents in parallel.
public final class JavaScriptWorkerPool: Sendable {
    /// The workers, each a thread with its own context.
    public let workers: [JavaScriptWorker]

    /// Starts `count` workers (default: one per core).
    public init(
        count: Int = ProcessInfo.processInfo.activeProcessorCount,
        configuration: JavaScriptConfiguration = JavaScriptConfiguration()
    ) throws(JavaScriptError) {
        var workers: [JavaScriptWorker] = []
        for _ in 0..<max(1, count) {
            workers.append(try JavaScriptWorker(configuration: configuration))
        }
        self.workers = workers
    }

    private let turn = TurnCounter()

    /// The worker whose turn it is, round-robin: for one-off calls such as reduce.
    public func nextWorker() -> JavaScriptWorker {
        workers[turn.next() % workers.count]
    }

    /// Runs `body` once on every worker at the same time, each with its index,
    /// and returns the results in worker order.
    public func runOnEach<T: Sendable>(_ body: @escaping @Sendable (_ index: Int, JavaScriptContext) throws -> T) throws -> [T] {
        let group = DispatchGroup()
        let results = ResultSlots<T>(count: workers.count)
        for (index, worker) in workers.enumerated() {
            group.enter()
            DispatchQueue.global().async {
                results.set(index, Result { try worker.run { context in try body(index, context) } })
                group.leave()
            }
        }
        group.wait()
        return try results.values()
    }

    /// Runs `body` for each of `count` pieces of work, every worker taking the
    /// next piece as it finishes one (so none waits long on another at the
    /// end), and returns the results in piece order.
    public func runShared<T: Sendable>(pieces count: Int, _ body: @escaping @Sendable (_ piece: Int, JavaScriptContext) throws -> T) throws -> [T] {
        let taken = TurnCounter()
        let results = ResultSlots<T>(count: count)
        _ = try runOnEach { _, context in
            while case let piece = taken.next() - 1, piece < count {
                results.set(piece, Result { try body(piece, context) })
            }
        }
        return try results.values()
    }

    /// Maps documents (UTF-8 JSON texts) with the given map function sources,
    /// splitting them across the workers; results come back in document order.
    ///
    /// - Throws: ``JavaScriptError`` when a function does not compile or a
    ///   document cannot be parsed. A function that throws on a document is
    ///   reported in that document's result.
    public func map(_ documents: [String], functions sources: [String]) throws -> [DocumentMapResult] {
        let chunk = (documents.count + workers.count - 1) / max(workers.count, 1)
        let parts = try runOnEach { index, context in
            let functions = try sources.enumerated().map { number, source in
                try context.compile(source, name: "map function \(number)")
            }
            let start = min(index * chunk, documents.count)
            let end = min(start + chunk, documents.count)
            return try documents[start..<end].map { document in try context.map(document, functions: functions) }
        }
        return parts.flatMap { $0 }
    }
}

/// Results written by several threads, one slot each.
private final class ResultSlots<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]

    init(count: Int) {
        slots = Array(repeating: nil, count: count)
    }

    func set(_ index: Int, _ result: Result<T, any Error>) {
        lock.lock()
        slots[index] = result
        lock.unlock()
    }

    func values() throws -> [T] {
        lock.lock()
        defer { lock.unlock() }
        return try slots.map { try $0!.get() }
    }
}

private final class TurnCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value &+= 1
        return value & .max
    }
}
