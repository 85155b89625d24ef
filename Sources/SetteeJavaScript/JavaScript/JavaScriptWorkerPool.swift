public import Foundation
public import SetteeCore

/// A fixed set of ``JavaScriptWorker``s, one per core by default, that map
/// documents in parallel.
public final class JavaScriptWorkerPool: Sendable {
    /// The workers, each a thread with its own context.
    package let workers: [JavaScriptWorker]

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
    package func runOnEach<T: Sendable>(_ body: @escaping @Sendable (_ index: Int, JavaScriptContext) throws -> T) throws -> [T] {
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
    package func runShared<T: Sendable>(pieces count: Int, _ body: @escaping @Sendable (_ piece: Int, JavaScriptContext) throws -> T) throws -> [T] {
        try startShared(pieces: count, body).wait()
    }

    /// Starts ``runShared(pieces:_:)``'s work without waiting for it. Work
    /// started later queues behind it on each worker, so a worker that runs
    /// out of this work's pieces goes straight on to the next work's while
    /// the others finish theirs. A single piece goes to one worker alone.
    package func startShared<T: Sendable>(pieces count: Int, _ body: @escaping @Sendable (_ piece: Int, JavaScriptContext) throws -> T) -> SharedWork<T> {
        let taken = TurnCounter()
        let work = SharedWork<T>(count: count)
        let first = count == 1 ? turn.next() : 0
        for offset in 0..<min(workers.count, max(count, 1)) {
            work.done.enter()
            workers[(first + offset) % workers.count].submit { context in
                while case let piece = taken.next() - 1, piece < count {
                    work.results.set(piece, Result { try body(piece, context) })
                }
                work.done.leave()
            }
        }
        return work
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
