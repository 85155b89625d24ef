import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SetteeCore
import Synchronization
import Testing
import SetteeServer

/// How many blocking tasks hold a thread, and whether they may let go.
private final class BusyCount: Sendable {
    let count = Atomic<Int>(0)
    let released = Atomic<Bool>(false)
}

@Suite("settee serve's own threads")
struct ServerThreadsTests {
    /// Seconds from sending `GET url` on a thread of its own (not the
    /// cooperative pool's) to its answer; `nil` without an answer.
    private static func timeRequest(_ url: URL) -> Double? {
        let answered = DispatchSemaphore(value: 0)
        let status = Mutex<Int?>(nil)
        var request = URLRequest(url: url)
        request.timeoutInterval = 30
        let started = Date()
        URLSession.shared.dataTask(with: request) { _, response, _ in
            status.withLock { $0 = (response as? HTTPURLResponse)?.statusCode }
            answered.signal()
        }.resume()
        answered.wait()
        return status.withLock { $0 } == 200 ? Date().timeIntervalSince(started) : nil
    }

    @Test("An in-process server answers within a second while synchronous work holds every thread of the cooperative pool")
    func answersWhileThePoolIsBusy() async throws {
        let server = try await RunningServer()
        let url = URL(string: server.base + "/")!
        #expect(Self.timeRequest(url) != nil)

        // As many tasks as the cooperative pool has threads, each blocking its thread until the
        // request is answered, or for 3 s: without threads of its own, the server answers after that.
        let width = ProcessInfo.processInfo.activeProcessorCount
        let busy = BusyCount()
        let blockers = (0..<width).map { _ in
            Task.detached {
                busy.count.add(1, ordering: .sequentiallyConsistent)
                for _ in 0..<300 where !busy.released.load(ordering: .sequentiallyConsistent) { usleep(10_000) }
            }
        }
        // Timed from a thread of its own once every blocker holds a thread (or after 10 s: a busy suite holds them anyway).
        let seconds = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                for _ in 0..<10_000 where busy.count.load(ordering: .sequentiallyConsistent) < width { usleep(1000) }
                let seconds = Self.timeRequest(url)
                busy.released.store(true, ordering: .sequentiallyConsistent)
                continuation.resume(returning: seconds)
            }
        }
        for blocker in blockers { await blocker.value }
        await server.stop()
        let elapsed = try #require(seconds, "the server did not answer")
        #expect(elapsed < 1, "answered after \(elapsed) s")
    }

    @Test("Requests whose database calls block their threads for long do not hold a short request back")
    func longCallsDoNotHoldShortOnes() async throws {
        let server = try await RunningServer { $0.requestThreads = 2 }
        #expect(try await server.request("PUT", "/db").status == 201)
        // Four design documents, each a view whose build maps four documents at 250 ms each:
        // built one after another on the database's one JavaScript worker, about 4 s in all.
        var docs = (0..<4).map { #"{"_id": "slow-\#($0)", "spin": 250}"# }
        for index in 0..<4 {
            docs.append(#"{"_id": "_design/d\#(index)", "views": {"v": {"map": "function (doc) { var until = Date.now() + (doc.spin || 0); while (Date.now() < until) {} emit(doc._id, \#(index)); }"}}}"#)
        }
        let body = Data(#"{"docs": [\#(docs.joined(separator: ","))]}"#.utf8)
        #expect(try await server.request("POST", "/db/_bulk_docs", body: body).status == 201)

        let finished = BusyCount()
        let builds = (0..<4).map { index in
            Task {
                _ = try await server.request("GET", "/db/_design/d\(index)/_view/v")
                finished.count.add(1, ordering: .sequentiallyConsistent)
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        let url = URL(string: server.base + "/db/slow-0")!
        let seconds = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.timeRequest(url)) }
        }
        let finishedBefore = finished.count.load(ordering: .sequentiallyConsistent)
        for build in builds { try await build.value }
        await server.stop()
        #expect(finishedBefore < 4, "the views were built before the document was read: the test proves nothing")
        let elapsed = try #require(seconds, "the server did not answer")
        #expect(elapsed < 1, "answered after \(elapsed) s")
    }

    @Test("A password check (PBKDF2) that keeps a request thread for long does not hold a short request back")
    func passwordChecksDoNotHoldShortRequests() async throws {
        // Iterations for about 1.5 s of hashing on this machine and build.
        let probe = 20_000
        let started = ContinuousClock.now
        _ = PBKDF2SHA256.derive(password: Array("x".utf8), salt: Array("salt".utf8), iterations: probe)
        let perIteration = (ContinuousClock.now - started) / probe
        let iterations = max(probe, Int(Duration.milliseconds(1500) / perIteration))
        let server = try await RunningServer { configuration in
            configuration.requestThreads = 1
            configuration.passwordIterations = iterations
            configuration.administrators = ["admin": "s3cret"]
        }
        let login = Task {
            let began = ContinuousClock.now
            let reply = try await server.request("POST", "/_session", json: ["name": "admin", "password": "wrong"])
            return (reply.status, ContinuousClock.now - began)
        }
        try await Task.sleep(for: .milliseconds(200))
        let url = URL(string: server.base + "/_up")!
        let seconds = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.timeRequest(url)) }
        }
        let (status, loginTook) = try await login.value
        await server.stop()
        #expect(status == 401)
        #expect(loginTook > .milliseconds(700), "the password check took \(loginTook): the test proves nothing")
        let elapsed = try #require(seconds, "the server did not answer")
        #expect(elapsed < 0.4, "answered after \(elapsed) s while the password check took \(loginTook)")
    }
}
