import Foundation
import Testing
import Settee
import SetteeReplication
import SetteeServer

/// Settee's replicator between local databases and `settee serve`: every
/// kind of data arrives with the same revision trees and bytes, re-runs
/// carry only what changed, checkpoints are CouchDB's.
@Suite("Replicator: CouchDB's replication protocol run by Settee")
struct ReplicatorTests {
    static let aaa = String(repeating: "a", count: 32), bbb = String(repeating: "b", count: 32)

    /// Writes one of each kind of data replication must carry.
    static func fill(_ db: Database) async throws {
        _ = try await db.put(#"{"_id":"numbers","big":9007199254740993,"huge":12345678901234567890,"float":1.0,"small":-0.0001}"#)
        for id in ["ünïcødé", "with/slash", "a b%20c?&=", "emoji😀", "_design/app"] {
            _ = try await db.put(JSONValue.object([("_id", .string(id)), ("views", ["v": ["map": "function(doc){emit(doc._id)}"]])]).jsonText)
        }
        // A conflict: two first revisions.
        let results = try await db.putReplicated([#"{"_id":"conflicted","_rev":"1-\#(aaa)","v":1}"#, #"{"_id":"conflicted","_rev":"1-\#(bbb)","v":2}"#])
        #expect(results.allSatisfy { if case .success = $0 { true } else { false } })
        // A deletion that keeps a body.
        let deleted = try await db.put(#"{"_id":"deleted","v":1}"#)
        _ = try await db.put(#"{"_id":"deleted","_rev":"\#(deleted.revision)","_deleted":true,"why":"gone"}"#)
        // Attachments: 2 MB of binary, and text.
        var random = SplitMix64(seed: 42)
        let bytes = Data((0..<2_000_000).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let withFile = try await db.put(#"{"_id":"files"}"#)
        let binary = try await db.putAttachment(Blob(data: bytes, contentType: "application/octet-stream"), named: "blob.bin",
                                                of: "files", revision: withFile.revision)
        _ = try await db.putAttachment(Blob(data: Data("hello text".utf8), contentType: "text/plain"), named: "note.txt",
                                       of: "files", revision: binary.revision)
        _ = try await db.put(#"{"_id":"_local/secret","token":"never replicated"}"#)
    }

    /// Every document id in the changes feed (deleted ones too).
    static func ids(_ db: Database) async throws -> [String] {
        try await db.changes(since: 0).map(\.id).sorted()
    }

    /// Expects the same documents, revision trees and leaf bytes (attachments included) at both ends.
    static func expectIdentical(_ source: Database, _ target: Database, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let ids = try await Self.ids(source)
        #expect(try await Self.ids(target) == ids, sourceLocation: sourceLocation)
        for id in ids {
            let tree = try await source.revisions(of: id)
            #expect(try await target.revisions(of: id) == tree, "\(id)", sourceLocation: sourceLocation)
            for leaf in tree?.leaves ?? [] {
                let a = try await source.document(id, revision: leaf.revision, attachments: true)
                let b = try await target.document(id, revision: leaf.revision, attachments: true)
                #expect(a?.jsonBytes == b?.jsonBytes, "\(id) \(leaf.revision)", sourceLocation: sourceLocation)
            }
        }
        #expect(try await target.document("_local/secret") == nil, sourceLocation: sourceLocation)
    }

    @Test("Local to local: every kind of data arrives identical; a re-run carries only what changed; a third carries nothing")
    func localToLocal() async throws {
        let folder = TemporaryDirectory()
        let source = try Database(at: folder.url.appendingPathComponent("source"))
        let target = try Database(at: folder.url.appendingPathComponent("target"))
        try await Self.fill(source)
        let replicator = Replicator(source: .local(source), target: .local(target))
        let first = try await replicator.run()
        #expect(first.state == .completed)
        #expect(first.docsWritten == 10)   // 9 documents, one with two leaves
        #expect(first.docWriteFailures == 0)
        try await Self.expectIdentical(source, target)
        let numbers = try #require(try await target.document("numbers"))
        #expect(numbers.json.contains(#""big":9007199254740993,"huge":12345678901234567890,"float":1.0"#))

        // Two edits: the second run reads only the changes after the checkpoint.
        let edited = try #require(try await source.document("numbers"))
        _ = try await source.put(#"{"_id":"numbers","_rev":"\#(edited.revision)","big":1}"#)
        _ = try await source.put(#"{"_id":"new"}"#)
        let second = try await replicator.run()
        #expect(second.missingChecked == 2)
        #expect(second.docsWritten == 2)
        try await Self.expectIdentical(source, target)
        let third = try await replicator.run()
        #expect(third.missingChecked == 0)
        #expect(third.docsWritten == 0)
        #expect(third.replicationID == first.replicationID)
        // The checkpoint is CouchDB's log, at both ends.
        let log = try #require(try await target.document("_local/" + first.replicationID)?.value)
        #expect(log["replication_id_version"] == 4)
        #expect(log["source_last_seq"] == .number(Double(try await source.info().updateSequence)))
        #expect(try await source.document("_local/" + first.replicationID)?.value["session_id"] == log["session_id"])
    }

    @Test("sync replicates both ways: each database ends with the other's documents, and a conflict made on both sides is one on both")
    func syncBothWays() async throws {
        let folder = TemporaryDirectory()
        let a = try Database(at: folder.url.appendingPathComponent("a")), b = try Database(at: folder.url.appendingPathComponent("b"))
        _ = try await a.put(#"{"_id":"from-a"}"#)
        _ = try await b.put(#"{"_id":"from-b"}"#)
        _ = try await a.put(#"{"_id":"both","side":"a"}"#)
        _ = try await b.put(#"{"_id":"both","side":"b"}"#)
        let (push, pull) = try await Replicator.sync(.local(a), .local(b))
        #expect(push.state == .completed && pull.state == .completed)
        #expect(try await Self.ids(a) == ["both", "from-a", "from-b"])
        #expect(try await Self.ids(b) == ["both", "from-a", "from-b"])
        #expect(try await a.revisions(of: "both")?.leaves.count == 2)
        #expect(try await a.revisions(of: "both") == b.revisions(of: "both"))
        #expect(try await a.document("both")?.json == b.document("both")?.json)
    }

    @Test("Revisions the target's validate_doc_update refuses are counted and listed; the others are written")
    func validationFailures() async throws {
        let folder = TemporaryDirectory()
        let source = try Database(at: folder.url.appendingPathComponent("source"))
        let target = try Database(at: folder.url.appendingPathComponent("target"))
        _ = try await target.put(#"{"_id":"_design/guard","validate_doc_update":"function (doc) { if (doc.bad) throw({forbidden: 'no bad documents'}); }"}"#)
        for (id, bad) in [("ok1", false), ("nope", true), ("ok2", false)] { _ = try await source.put(#"{"_id":"\#(id)","bad":\#(bad)}"#) }
        let status = try await Replicator(source: .local(source), target: .local(target)).run()
        #expect(status.docsWritten == 2)
        #expect(status.docWriteFailures == 1)
        #expect(status.failures.map(\.id) == ["nope"])
        #expect(status.failures.first?.error == "forbidden")
        #expect(try await target.document("nope") == nil)
        #expect(try await target.document("ok2") != nil)
    }

    @Test("Document ids and selector filters carry only the documents they name")
    func filters() async throws {
        let folder = TemporaryDirectory()
        let source = try Database(at: folder.url.appendingPathComponent("source"))
        for index in 0..<20 { _ = try await source.put(#"{"_id":"d\#(index)","even":\#(index % 2 == 0)}"#) }
        let byID = try Database(at: folder.url.appendingPathComponent("ids"))
        var options = ReplicationOptions()
        options.filter = .documentIDs(["d3", "d5", "missing"])
        let idStatus = try await Replicator(source: .local(source), target: .local(byID), options: options).run()
        #expect(try await Self.ids(byID) == ["d3", "d5"])
        let selected = try Database(at: folder.url.appendingPathComponent("selected"))
        options.filter = .selector(["even": true])
        let selectorStatus = try await Replicator(source: .local(source), target: .local(selected), options: options).run()
        #expect(try await Self.ids(selected).count == 10)
        #expect(try await selected.document("d1") == nil)
        #expect(idStatus.replicationID != selectorStatus.replicationID)
        options.filter = .function("app/f")
        await #expect(throws: ReplicationError.self) { try await Replicator(source: .local(source), target: .local(selected), options: options).run() }
    }

    @Test("The replication id is CouchDB 3.5's for the same server and endpoints (measured against CouchDB 3.5.0)")
    func couchReplicationID() async throws {
        // CouchDB 3.5.0 (uuid a4bdb91c…) replicating http://adm:pass@127.0.0.1:5984/rsrc to …/rtgt wrote
        // its checkpoint as _local/4223ff6aa53e3327efbab628d209f1b5.
        var options = ReplicationOptions()
        options.serverUUID = "a4bdb91cb9075cb7bd9982d97d81e178"
        let source = try RemoteDatabase("http://adm:pass@127.0.0.1:5984/rsrc")
        let target = try RemoteDatabase("http://adm:pass@127.0.0.1:5984/rtgt")
        #expect(try Replicator.replicationID(source: .remote(source), target: .remote(target), options: options)
            == "4223ff6aa53e3327efbab628d209f1b5")
        options.continuous = true
        #expect(try Replicator.replicationID(source: .remote(source), target: .remote(target), options: options)
            == "4223ff6aa53e3327efbab628d209f1b5+continuous")
        #expect(source.description == "http://127.0.0.1:5984/rsrc/")
        #expect(!source.description.contains("pass"))
    }

    @Test("Interrupted after some batches, a replication resumes from its checkpoint")
    func resumesFromCheckpoint() async throws {
        let folder = TemporaryDirectory()
        let source = try Database(at: folder.url.appendingPathComponent("source"))
        _ = try await source.write { batch in
            for index in 0..<500 { _ = try batch.put(#"{"_id":"d\#(index)"}"#) }
        }
        let target = try Database(at: folder.url.appendingPathComponent("target"))
        var options = ReplicationOptions()
        options.batchSize = 50
        options.checkpointInterval = 0
        let replicator = Replicator(source: .local(source), target: .local(target), options: options)
        let task = Task {
            try await replicator.run { status in
                if status.docsWritten >= 200 { withUnsafeCurrentTask { $0?.cancel() } }
            }
        }
        let interrupted = try await task.value
        #expect(interrupted.state == .stopped)
        #expect(interrupted.docsWritten >= 200 && interrupted.docsWritten < 500)
        let resumed = try await replicator.run()
        #expect(resumed.state == .completed)
        // It started at the checkpoint: what the first run checked is not checked again.
        #expect(resumed.missingChecked <= 500 - 200)
        #expect(resumed.missingChecked + interrupted.missingChecked >= 500)
        try await Self.expectIdentical(source, target)
    }

    @Test("settee replicate killed mid-way (SIGKILL) resumes from its last checkpoint; both ends end identical", .timeLimit(.minutes(3)))
    func killedMidWay() async throws {
        let folder = TemporaryDirectory()
        let sourceURL = folder.url.appendingPathComponent("source"), targetURL = folder.url.appendingPathComponent("target")
        let source = try Database(at: sourceURL)
        let total = 20_000
        _ = try await source.write { batch in
            for index in 0..<total { _ = try batch.put(#"{"_id":"d\#(index)","n":\#(index),"text":"\#(String(repeating: "x", count: 200))"}"#) }
        }
        let settee = try SetteeExecutable.find()
        let arguments = ["replicate", sourceURL.path, targetURL.path, "--batch-size", "100", "--checkpoint-interval", "0"]
        let child = try settee.start(arguments, in: folder.url)
        // Killed once a part has arrived, and before the end.
        var arrived = 0
        for _ in 0..<2000 where arrived < 2000 {
            try await Task.sleep(for: .milliseconds(10))
            if let target = try? Database(at: targetURL, options: { var o = Database.Options(); o.createIfMissing = false; return o }()) {
                arrived = (try? await target.info().documentCount) ?? 0
                target.close()
            }
        }
        child.kill()
        let killed = try child.wait()
        #expect(killed.signal == SIGKILL || killed.exitStatus == 0)
        let rerun = try settee.run(arguments, in: folder.url)
        #expect(rerun.exitStatus == 0, "\(rerun.standardError)")
        let report = try JSONValue(parsing: rerun.standardOutput)
        if killed.signal == SIGKILL, case .number(let checked, _)? = report["missing_checked"] {
            // It went on from a checkpoint: what the first run carried and checkpointed was not checked again.
            #expect(Int(checked) < total, "\(rerun.standardOutput)")
        }
        let target = try Database(at: targetURL)
        #expect(try await target.info().documentCount == total)
        let targetIDs = try await Self.ids(target), sourceIDs = try await Self.ids(source)
        #expect(targetIDs == sourceIDs)
    }

    @Test("Documents with large attachments travel a few at a time: memory stays far below the batch's size")
    func largeAttachmentsBounded() async throws {
        let folder = TemporaryDirectory()
        let sourceURL = folder.url.appendingPathComponent("source")
        let source = try Database(at: sourceURL)
        var random = SplitMix64(seed: 3)
        let block = Data((0..<(64 << 10)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let count = 40, size = 4 << 20   // 160 MB of attachments in one batch
        for index in 0..<count {
            var bytes = Data(capacity: size)
            for _ in 0..<(size / block.count) { bytes.append(block) }
            bytes[0] = UInt8(index)   // a body of its own each
            _ = try await source.putAttachment(Blob(data: bytes), named: "a.bin", of: "d\(index)", revision: nil)
        }
        source.close()
        let settee = try SetteeExecutable.find()
        let run = try settee.run(["replicate", sourceURL.path, folder.url.appendingPathComponent("target").path], in: folder.url)
        #expect(run.exitStatus == 0, "\(run.standardError)")
        #expect(try JSONValue(parsing: run.standardOutput)["docs_written"] == .number(Double(count)))
        // The whole batch at once took 700 MB here (213 MB of base64, several times over); in groups, 265 MB.
        #expect(run.peakAnonymousBytes < 400 << 20, "peak \(run.peakAnonymousBytes >> 20) MB")
        let target = try Database(at: folder.url.appendingPathComponent("target"))
        #expect(try await target.attachment("a.bin", of: "d39")?.length == size)
    }

    @Test("Local to settee serve and back, with credentials: identical at every end; nothing carried twice")
    func throughServer() async throws {
        let server = try await RunningServer { $0.administrators = ["adm": "secret"] }
        defer { Task { await server.stop() } }
        let folder = TemporaryDirectory()
        let source = try Database(at: folder.url.appendingPathComponent("source"))
        try await Self.fill(source)
        let remote = try RemoteDatabase("http://adm:secret@127.0.0.1:\(server.port)/copy")
        // Without create_target the missing database is an error, named without the password.
        do {
            try await Replicator(source: .local(source), target: .remote(remote)).run()
            Issue.record("replicated to a missing database")
        } catch let error as ReplicationError {
            #expect(error == .targetMissing(remote.description))
            #expect(!error.description.contains("secret"))
        }
        var options = ReplicationOptions()
        options.createTarget = true
        let push = try await Replicator(source: .local(source), target: .remote(remote), options: options).run()
        #expect(push.docsWritten == 10)
        #expect(push.docWriteFailures == 0)
        let back = try Database(at: folder.url.appendingPathComponent("back"))
        let pull = try await Replicator(source: .remote(remote), target: .local(back)).run()
        #expect(pull.docsWritten == 10)
        try await Self.expectIdentical(source, back)
        #expect(try await Replicator(source: .remote(remote), target: .local(back)).run().missingChecked == 0)
        // Wrong credentials: refused, not retried forever.
        let wrong = try RemoteDatabase("http://adm:wrong@127.0.0.1:\(server.port)/copy")
        await #expect(throws: ReplicationError.self) { try await Replicator(source: .remote(wrong), target: .local(back)).run() }
    }

    @Test("A continuous replication carries new writes as they come, and survives the server's restart")
    func continuousThroughRestart() async throws {
        // A port outside the ephemeral range, which the other tests' servers (port 0) never take, so that
        // the restarted server finds it free; tried again while the old socket lets go.
        var first: RunningServer?
        for _ in 0..<20 where first == nil { first = try? await RunningServer(port: Int.random(in: 20_000..<30_000)) }
        let firstServer = try #require(first)
        let port = firstServer.port, directory = firstServer.directory
        let folder = TemporaryDirectory()
        let source = try Database(at: folder.url.appendingPathComponent("source"))
        _ = try await source.put(#"{"_id":"first"}"#)
        var options = ReplicationOptions()
        options.continuous = true
        options.createTarget = true
        options.retryDelay = 0.1
        options.retries = 1
        let remote = try RemoteDatabase("http://127.0.0.1:\(port)/live")
        let replicator = Replicator(source: .local(source), target: .remote(remote), options: options)
        let task = Task { try await replicator.run() }
        func arrives(_ id: String, _ server: RunningServer) async throws -> Bool {
            for _ in 0..<300 {
                if try await server.request("GET", "/live/\(id)").status == 200 { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }
        #expect(try await arrives("first", firstServer))
        _ = try await source.put(#"{"_id":"second"}"#)
        #expect(try await arrives("second", firstServer))
        await firstServer.stopKeepingFolder()
        _ = try await source.put(#"{"_id":"while-down"}"#)
        // Tried again while the old socket and folder let go (slowly on a busy machine); the last refusal said if it never starts.
        var restarted: RunningServer?
        var refusal: (any Error)?
        for _ in 0..<300 where restarted == nil {
            do {
                restarted = try await RunningServer(directory: directory, port: port)
            } catch {
                refusal = error
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let server = try #require(restarted, "\(String(describing: refusal))")
        defer { Task { await server.stop() } }
        #expect(try await arrives("while-down", server))
        _ = try await source.put(#"{"_id":"after"}"#)
        #expect(try await arrives("after", server))
        task.cancel()
        let status = try await task.value
        #expect(status.state == .stopped)
    }
}

@Suite("settee serve: /_replicate and /_scheduler/jobs")
struct ServerReplicateTests {
    @Test("POST /_replicate copies a database by name or URL, for administrators only; continuous jobs are listed and cancelled")
    func replicateEndpoint() async throws {
        let server = try await RunningServer { $0.administrators = ["adm": "secret"] }
        defer { Task { await server.stop() } }
        let admin = (name: "adm", password: "secret")
        #expect(try await server.request("PUT", "/a", user: admin).status == 201)
        for index in 0..<30 {
            #expect(try await server.request("PUT", "/a/d\(index)", body: Data(#"{"n":\#(index),"big":100000000000000000001}"#.utf8),
                                             user: admin).status == 201)
        }
        // The server's UUID is stable: it enters the replication ids.
        let uuid = try await server.request("GET", "/").json["uuid"]
        #expect(uuid?.stringValue?.count == 32)
        // Not for anyone else.
        #expect(try await server.request("POST", "/_replicate", json: ["source": "a", "target": "b"]).status == 401)
        let missing = try await server.request("POST", "/_replicate", json: ["source": "a", "target": "b"], user: admin)
        #expect(missing.status == 404)
        #expect(missing.json["error"] == "db_not_found")
        let once = try await server.request("POST", "/_replicate", json: ["source": "a", "target": "b", "create_target": true], user: admin)
        #expect(once.status == 200, "\(once.json.jsonText)")
        #expect(once.json["ok"] == true)
        #expect(once.json["history"]?[0]?["docs_written"] == 30)
        let copied = try await server.request("GET", "/b/d7", user: admin)
        #expect(String(decoding: copied.body, as: UTF8.self).contains(#""big":100000000000000000001"#))
        // Again: nothing to carry.
        let again = try await server.request("POST", "/_replicate", json: ["source": "a", "target": "b"], user: admin)
        #expect(again.json["no_changes"] == true)
        // By URL, with the credentials in `auth`, a selector.
        let url = JSONValue.string("\(server.base)/a")
        let byURL = try await server.request("POST", "/_replicate", json: [
            "source": ["url": url, "auth": ["basic": ["username": "adm", "password": "secret"]]],
            "target": "c", "create_target": true, "selector": ["n": ["$lt": 5]],
        ], user: admin)
        #expect(byURL.status == 200, "\(byURL.json.jsonText)")
        #expect(try await server.request("GET", "/c", user: admin).json["doc_count"] == 5)
        // Continuous: listed in _scheduler/jobs until cancelled; new writes arrive.
        let started = try await server.request("POST", "/_replicate", json: ["source": "a", "target": "b", "continuous": true], user: admin)
        #expect(started.status == 202)
        let id = try #require(started.json["_local_id"]?.stringValue)
        #expect(id.hasSuffix("+continuous"))
        #expect(try await server.request("GET", "/_scheduler/jobs", user: admin).json["jobs"]?[0]?["id"] == .string(id))
        #expect(try await server.request("GET", "/_scheduler/jobs").status == 401)
        #expect(try await server.request("PUT", "/a/later", json: ["n": 100], user: admin).status == 201)
        var arrived = false
        for _ in 0..<200 where !arrived {
            arrived = try await server.request("GET", "/b/later", user: admin).status == 200
            if !arrived { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(arrived)
        // And in _active_tasks, as CouchDB lists a replication task.
        let tasks = try await server.request("GET", "/_active_tasks", user: admin).json
        #expect(tasks[0]?["type"] == "replication")
        #expect(tasks[0]?["replication_id"] == .string(id))
        #expect(tasks[0]?["continuous"] == true)
        #expect((tasks[0]?["docs_written"]?.doubleValue ?? 0) >= 1)
        #expect(tasks[0]?["through_seq"] != nil)
        #expect(try await server.request("GET", "/_active_tasks").status == 401)
        let cancelled = try await server.request("POST", "/_replicate", json: ["replication_id": .string(id), "cancel": true], user: admin)
        #expect(cancelled.status == 200)
        #expect(try await server.request("GET", "/_scheduler/jobs", user: admin).json["jobs"] == [])
        #expect(try await server.request("GET", "/_active_tasks", user: admin).json == [])
        #expect(try await server.request("POST", "/_replicate", json: ["replication_id": .string(id), "cancel": true], user: admin).status == 404)
    }

    @Test("The replication routes pass the read gate: every method, anonymous or a user, is refused and changes nothing; a password replicated into _users is never stored as sent")
    func replicationRoutesGated() async throws {
        let server = try await RunningServer { $0.administrators = ["adm": "secret"] }
        defer { Task { await server.stop() } }
        let admin = (name: "adm", password: "secret")
        for path in ["/_users", "/_replicator", "/plain"] { #expect(try await server.request("PUT", path, user: admin).status == 201) }
        #expect(try await server.request("PUT", "/_users/org.couchdb.user:bob",
                                         json: ["name": "bob", "password": "pw", "roles": [], "type": "user"]).status == 201)
        let bob = (name: "bob", password: "pw")
        let hostile: JSONValue = ["source": "_users", "target": "stolen", "create_target": true, "continuous": true,
                                  "replication_id": "x", "cancel": true, "worker_batch_size": 1e300, "checkpoint_interval": -1e300]
        for path in ["/_replicate", "/_scheduler/jobs", "/_scheduler/docs", "/_scheduler/docs/_replicator/x"] {
            for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "COPY"] {
                for user in [nil, bob] as [(name: String, password: String)?] {
                    let reply = method == "GET" || method == "HEAD" ? try await server.request(method, path, user: user)
                        : try await server.request(method, path, json: hostile, user: user)
                    #expect(reply.status == 401 || reply.status == 403, "\(method) \(path) as \(user?.name ?? "anonymous"): \(reply.status)")
                }
            }
        }
        #expect(try await server.request("GET", "/stolen", user: admin).status == 404)
        #expect(try await server.request("GET", "/_scheduler/jobs", user: admin).json["jobs"] == [])
        // Numbers past any integer in an administrator's request: no trap, the defaults hold.
        let odd = try await server.request("POST", "/_replicate", json: ["source": "plain", "target": "copy", "create_target": true,
                                                                          "worker_batch_size": 1e300, "checkpoint_interval": -1e300,
                                                                          "since_seq": 1e300], user: admin)
        #expect(odd.status == 200, "\(odd.json.jsonText)")
        // A user document with a password, replicated into _users by an administrator: the store's _users rule applies.
        #expect(try await server.request("PUT", "/plain/org.couchdb.user:eve",
                                         json: ["_id": "org.couchdb.user:eve", "name": "eve", "password": "plaintext", "roles": [], "type": "user"],
                                         user: admin).status == 201)
        _ = try await server.request("POST", "/_replicate", json: ["source": "plain", "target": "_users", "doc_ids": ["org.couchdb.user:eve"]], user: admin)
        let stored = try await server.request("GET", "/_users/org.couchdb.user:eve", user: admin)
        #expect(!String(decoding: stored.body, as: UTF8.self).contains("plaintext"))
    }

    /// Polls `path` until `done` holds of its JSON (10 s at most).
    static func eventually(_ server: RunningServer, _ path: String, user: (name: String, password: String)?,
                           _ done: (JSONValue) -> Bool) async throws -> JSONValue {
        var last: JSONValue = nil
        for _ in 0..<200 {
            last = try await server.request("GET", path, user: user).json
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        return last
    }

    @Test("A _replicator document starts its replication; a one-shot one records completed with its stats; deleting a continuous one stops it")
    func replicatorDatabase() async throws {
        let server = try await RunningServer { $0.administrators = ["adm": "secret"] }
        defer { Task { await server.stop() } }
        let admin = (name: "adm", password: "secret")
        for path in ["/a", "/_replicator", "/_users"] { #expect(try await server.request("PUT", path, user: admin).status == 201) }
        for index in 0..<10 { _ = try await server.request("PUT", "/a/d\(index)", json: ["n": .number(Double(index))], user: admin) }
        #expect(try await server.request("PUT", "/_replicator/once", json: ["source": "a", "target": "b", "create_target": true],
                                         user: admin).status == 201)
        let done = try await Self.eventually(server, "/_replicator/once", user: admin) { $0["_replication_state"] == "completed" }
        #expect(done["_replication_state"] == "completed", "\(done.jsonText)")
        #expect(done["_replication_stats"]?["docs_written"] == 10)
        #expect(try await server.request("GET", "/b", user: admin).json["doc_count"] == 10)
        let scheduled = try await server.request("GET", "/_scheduler/docs/_replicator/once", user: admin).json
        #expect(scheduled["state"] == "completed")

        // Continuous: new writes arrive until the document is deleted.
        let live = try await server.request("PUT", "/_replicator/live", json: ["source": "a", "target": "b", "continuous": true], user: admin)
        #expect(live.status == 201)
        let running = try await Self.eventually(server, "/_scheduler/docs/_replicator/live", user: admin) { $0["state"] == "running" }
        #expect(running["state"] == "running")
        _ = try await server.request("PUT", "/a/new", json: ["n": 100], user: admin)
        let arrived = try await Self.eventually(server, "/b/new", user: admin) { $0["n"] == 100 }
        #expect(arrived["n"] == 100)
        let rev = try #require(try await server.request("GET", "/_replicator/live", user: admin).json["_rev"]?.stringValue)
        #expect(try await server.request("DELETE", "/_replicator/live?rev=\(rev)", user: admin).status == 200)
        _ = try await Self.eventually(server, "/_scheduler/docs", user: admin) { $0["total_rows"] == 1 }
        _ = try await server.request("PUT", "/a/after-delete", json: ["n": 101], user: admin)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await server.request("GET", "/b/after-delete", user: admin).status == 404)

        // A user's document may not name this server's databases: they would be opened past authorization.
        #expect(try await server.request("PUT", "/_users/org.couchdb.user:bob",
                                         json: ["name": "bob", "password": "pw", "roles": [], "type": "user"]).status == 201)
        let bob = (name: "bob", password: "pw")
        #expect(try await server.request("PUT", "/_replicator/steal", json: ["source": "_users", "target": "mine", "create_target": true],
                                         user: bob).status == 201)
        let refused = try await Self.eventually(server, "/_replicator/steal", user: bob) { $0["_replication_state"] != nil }
        #expect(refused["_replication_state"] == "failed")
        #expect(refused["_replication_state_reason"]?.stringValue?.contains("URL") == true)
        #expect(try await server.request("GET", "/mine", user: admin).status == 404)
    }
}
