import Foundation
import HTTPTypes
import Hummingbird
import ServiceLifecycle
import Settee
import Synchronization

/// `GET/POST /{db}/_changes`: the changes feed, streamed as CouchDB's
/// `chttpd_db:changes_callback` writes it.
extension CouchAPI {
    func changesEndpoint(_ name: String, _ db: Database, _ request: inout CouchRequest) async throws -> Response {
        try allow(request, "GET,HEAD,POST")
        var body: JSONValue?
        if request.method == .post {
            let bytes = try await request.decodedBodyBytes()
            if !bytes.isEmpty {
                guard let parsed = try? CouchRequest.json(bytes) else { throw CouchError.invalidJSON }
                guard case .object = parsed else { throw CouchError.badRequest("Request body must be a JSON object") }
                body = parsed
            }
        }
        let query = try ChangesQuery(request)
        let filter = try await ChangesFilter(query, request: request, body: body, database: name, db: db)
        let start: UInt64 = switch query.since {
        case .now: try await db.lastSequence()
        case .sequence(let sequence): sequence
        }
        let stream = ChangesStream(db: db, query: query, filter: filter, start: start)
        // A client that goes ends the feed's waits at once, not at the next change or the timeout.
        if let connection = request.connection { ConnectionWatch.whenClientGone(connection) { [stop = stream.stop] in stop.fire() } }
        // The first changes are read and filtered before the response starts, so
        // that a filter that fails answers with its error (as CouchDB's delayed response does).
        let first = query.descending ? nil : try await stream.firstBatch()
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "must-revalidate"]
        if query.feed == .eventsource {
            headers = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        }
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // A graceful shutdown (SIGINT, SIGTERM) waits for the requests under
            // way: a feed that waits for changes ends then, as at its timeout.
            try await withGracefulShutdownHandler {
                try await stream.write(to: &writer, first: first)
            } onGracefulShutdown: {
                stream.stop.fire()
            }
            try await writer.finish(nil)
        })
    }
}

/// One response of the changes feed: reads the changes after a sequence,
/// filters them, writes their rows, and (longpoll, continuous, eventsource)
/// waits for more.
struct ChangesStream: Sendable {
    let db: Database
    let query: ChangesQuery
    let filter: ChangesFilter
    /// The sequence the feed starts after.
    let start: UInt64
    /// Fired when the server shuts down or the client's connection closes.
    let stop = FeedStop()

    /// How many changes one read takes.
    static let batchSize = 256

    /// What has been written: CouchDB's `#cacc` (prepend, chunks sent).
    private struct Output {
        var buffer = ByteBuffer()
        /// Rows and heartbeats written so far.
        var chunksSent = 0
        var rows = 0
        var prepend = ""
    }

    /// Writes the whole response; returns at its end (the limit, the
    /// timeout, a write that fails because the client went, or the task
    /// cancelled as the server stops).
    func write(to writer: inout any ResponseBodyWriter, first: FirstRead?) async throws {
        var output = Output()
        if query.feed == .normal || query.feed == .longpoll { output.buffer.writeString("{\"results\":[\n") }
        if query.descending {
            try await writeNewestFirst(&output, to: &writer)
            return
        }
        var cursor = start
        var remaining = query.limit
        var prefetched = first
        feed: while true {
            // `top` is read before the batches: a write that commits in between is read by them, or waited for.
            let top = if let prefetched { prefetched.top } else { try await db.lastSequence() }
            var reachedLimit = remaining <= 0
            reading: while !reachedLimit {
                // Reading goes on to an empty batch, read after `top`: no change up to it is missed.
                let (batch, documents, passes, covered) = if let first = prefetched { first.batch } else { try await read(after: cursor) }
                prefetched = nil
                if batch.isEmpty, covered == nil { break }
                defer {
                    // Every change up to `covered` was in the batch: reading goes on from there.
                    if let covered, !reachedLimit { cursor = max(cursor, covered) }
                }
                for (index, change) in batch.enumerated() {
                    cursor = change.sequence
                    guard passes[index] else { continue }
                    try await appendRow(change, document: documents.isEmpty ? nil : documents[index], remaining: remaining, to: &output)
                    remaining -= 1
                    if remaining <= 0 {
                        reachedLimit = true
                        break reading
                    }
                }
                try await flush(&output, to: &writer)
            }
            if !reachedLimit { cursor = max(cursor, top) }
            try await flush(&output, to: &writer)
            switch query.feed {
            case .normal: break feed
            case .longpoll where output.rows > 0: break feed
            case .continuous where reachedLimit, .eventsource where reachedLimit: break feed
            default: break
            }
            // CouchDB's waiting_for_updates: a newline when nothing was sent yet.
            if output.chunksSent == 0 {
                output.buffer.writeString("\n")
                output.chunksSent = 1
                try await flush(&output, to: &writer)
            }
            waiting: while true {
                switch await wait(after: cursor, milliseconds: query.waitMilliseconds) {
                case .committed:
                    continue feed
                case .timedOut where query.heartbeat != nil:
                    output.buffer.writeString(query.feed == .eventsource ? "event: heartbeat\ndata: \n\n" : "\n")
                    output.chunksSent += 1
                    try await flush(&output, to: &writer)
                    continue waiting
                case .timedOut, .ended:
                    break feed
                }
            }
        }
        try await finish(&output, lastSequence: cursor, pending: try await db.countChanges(after: cursor), to: &writer)
    }

    /// `descending=true`: newest first, from the database's last change (`since` is not read, as in CouchDB).
    private func writeNewestFirst(_ output: inout Output, to writer: inout any ResponseBodyWriter) async throws {
        // Unfiltered, the newest `limit` changes are all it reads.
        var unfiltered = false
        if case .all = filter.kind { unfiltered = true }
        let changes = try await db.changesNewestFirst(limit: unfiltered ? query.limit : nil)
        let total = unfiltered ? try await db.countChanges(after: 0) : changes.count
        var remaining = query.limit
        var last = try await db.lastSequence()
        var processed = 0
        var offset = 0
        reading: while offset < changes.count, remaining > 0 {
            let batch = Array(changes[offset..<min(offset + Self.batchSize, changes.count)])
            offset += batch.count
            let documents = try await self.documents(of: batch, always: false)
            let passes = try await filter.passes(batch, documents: documents)
            for (index, change) in batch.enumerated() {
                last = change.sequence
                processed += 1
                guard passes[index] else { continue }
                try await appendRow(change, document: documents.isEmpty ? nil : documents[index], remaining: remaining, to: &output)
                remaining -= 1
                if remaining <= 0 { break reading }
            }
            try await flush(&output, to: &writer)
        }
        try await finish(&output, lastSequence: last, pending: total - processed, to: &writer)
    }

    /// Changes after `sequence`, their documents (when needed) and whether each passes the filter.
    /// `covered`: when set, the batch holds every passing change up to that sequence.
    typealias Batch = (changes: [Change], documents: [Document?], passes: [Bool], covered: UInt64?)

    /// The next batch of changes after `sequence`.
    func read(after sequence: UInt64) async throws -> Batch {
        let batch = try await db.changes(since: sequence, limit: Self.batchSize)
        guard !batch.isEmpty else { return ([], [], [], nil) }
        let documents = try await self.documents(of: batch, always: false)
        return (batch, documents, try await filter.passes(batch, documents: documents), nil)
    }

    /// The first batch, read before the response starts, and the database's
    /// last sequence read before it (a write may commit between the two).
    typealias FirstRead = (batch: Batch, top: UInt64)

    /// CouchDB's `changes_doc_ids_optimization_threshold`.
    static let documentIDsLookupLimit = 1000

    /// The first batch: with `_doc_ids` naming at most 1000 ids, the named
    /// documents' changes, looked up by id instead of read from the whole
    /// feed (as CouchDB's `send_changes_doc_ids`); otherwise the first changes.
    func firstBatch() async throws -> FirstRead {
        let top = try await db.lastSequence()
        guard case .documentIDs(let ids) = filter.kind, ids.count <= Self.documentIDsLookupLimit else {
            return (try await read(after: start), top)
        }
        let covered = top
        var found: [Document] = []
        for id in ids where !id.hasPrefix("_local/") {
            if let document = try await db.documentIncludingDeleted(id), document.sequence > start { found.append(document) }
        }
        found.sort { $0.sequence < $1.sequence }
        let changes = found.map { Change(sequence: $0.sequence, id: $0.id, revision: $0.revision, isDeleted: $0.isDeleted) }
        let documents: [Document?] = query.includeDocs ? try await self.documents(of: changes, always: false) : []
        return ((changes, documents, changes.map { _ in true }, covered), top)
    }

    /// The changed documents when the filter or `include_docs` needs them.
    private func documents(of changes: [Change], always: Bool) async throws -> [Document?] {
        guard filter.needsDocuments || query.includeDocs || always else { return [] }
        var documents: [Document?] = []
        documents.reserveCapacity(changes.count)
        for change in changes {
            if query.attachments, !change.isDeleted, let document = query.conflicts && query.includeDocs
                ? try await db.documentWithAttachmentsAndConflicts(change.id) : try await db.document(change.id, attachments: true) {
                documents.append(document)
            } else if query.attachments, change.isDeleted {
                // A tombstone keeps the attachments its deletion named. A deleted winner has
                // no live losing leaf (live leaves win): `conflicts` adds nothing to it.
                documents.append(try await db.documentIncludingDeleted(change.id, attachments: nil))
            } else if query.conflicts && query.includeDocs {
                documents.append(try await db.documentIncludingDeletedWithConflicts(change.id))
            } else {
                documents.append(try await db.documentIncludingDeleted(change.id))
            }
        }
        return documents
    }

    /// Appends one change's row: `{"seq","id","changes","deleted","doc"}`.
    private func appendRow(_ change: Change, document: Document?, remaining: Int, to output: inout Output) async throws {
        var row = ByteBuffer()
        row.writeString("{\"seq\":")
        // seq_interval: CouchDB counts the limit down, and shows the seq when it divides.
        let sequence: JSONValue = if let interval = query.seqInterval, remaining % interval != 0 { .null } else {
            .string(String(change.sequence))
        }
        row.writeString(sequence.jsonText)
        row.writeString(",\"id\":")
        row.writeString(JSONValue.string(change.id).jsonText)
        // style=all_docs: every leaf, the winner first.
        let leaves = query.allDocsStyle ? try await db.revisions(of: change.id)?.leaves.map(\.revision) ?? [change.revision] : [change.revision]
        row.writeString(",\"changes\":[" + leaves.map { "{\"rev\":\"\($0)\"}" }.joined(separator: ",") + "]")
        if change.isDeleted { row.writeString(",\"deleted\":true") }
        if query.includeDocs {
            row.writeString(",\"doc\":")
            if let document { row.writeBytes(try filter.shownDocument(document)) } else { row.writeString("null") }
        }
        row.writeString("}")
        switch query.feed {
        case .continuous:
            output.buffer.writeBuffer(&row)
            output.buffer.writeString("\n")
        case .eventsource:
            output.buffer.writeString("data: ")
            output.buffer.writeBuffer(&row)
            output.buffer.writeString("\nid: ")
            output.buffer.writeString(sequence.jsonText)
            output.buffer.writeString("\n\n")
        case .normal, .longpoll:
            output.buffer.writeString(output.prepend)
            output.buffer.writeBuffer(&row)
            output.prepend = ",\r\n"
        }
        output.rows += 1
        output.chunksSent += 1
    }

    /// The end: `last_seq` and `pending` (none for eventsource).
    private func finish(_ output: inout Output, lastSequence: UInt64, pending: Int, to writer: inout any ResponseBodyWriter) async throws {
        let last = JSONValue.string(String(lastSequence)).jsonText
        switch query.feed {
        case .normal, .longpoll:
            output.buffer.writeString("\n],\n\"last_seq\":\(last),\"pending\":\(pending)}\n")
        case .continuous:
            output.buffer.writeString("{\"last_seq\":\(last),\"pending\":\(pending)}\n")
        case .eventsource:
            break
        }
        try await flush(&output, to: &writer)
    }

    private func flush(_ output: inout Output, to writer: inout any ResponseBodyWriter) async throws {
        guard output.buffer.readableBytes > 0 else { return }
        try await writer.write(output.buffer)
        output.buffer.clear()
    }

    private enum WaitOutcome: Sendable {
        case committed, timedOut, ended
    }

    /// Waits for a commit past `sequence`, at most `milliseconds`.
    private func wait(after sequence: UInt64, milliseconds: Int) async -> WaitOutcome {
        let db = self.db, stop = self.stop
        return await withTaskGroup(of: WaitOutcome.self) { group in
            group.addTask { await db.waitForCommit(after: sequence) ? .committed : .ended }
            group.addTask {
                await stop.wait()
                return .ended
            }
            group.addTask {
                do {
                    try await Task.sleep(for: .milliseconds(milliseconds))
                    return .timedOut
                } catch {
                    return .ended
                }
            }
            let first = await group.next() ?? .ended
            group.cancelAll()
            return first
        }
    }
}

/// Ends a feed's waits once fired: the server is shutting down, or the
/// client has gone.
final class FeedStop: Sendable {
    private struct State {
        var fired = false
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    /// Wakes every wait, now and later.
    func fire() {
        let waiters = state.withLock { state in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once fired, or when the calling task is cancelled.
    func wait() async {
        let id = state.withLock { state in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
