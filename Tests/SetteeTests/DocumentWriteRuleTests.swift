import Foundation
import Synchronization
import Testing
import Settee

/// Refuses documents marked `"refuse": true`, and any change to a document
/// marked `"locked": true`; records what it saw.
private final class RecordingRule: DocumentWriteRule, Sendable {
    let seen = Mutex<[(id: String, hadOld: Bool, writer: String?)]>([])

    func check(_ document: JSONValue, old: JSONValue?, writer: Database.ValidationContext?) throws {
        seen.withLock { $0.append((document["_id"]?.stringValue ?? "?", old != nil, writer?.userContext.name)) }
        if document["refuse"] == .bool(true) { throw DocumentError(.forbidden, "refused by the rule") }
        if old?["locked"] == .bool(true) { throw DocumentError(.forbidden, "locked") }
    }
}

@Suite("A Swift write rule sees every write, whatever path it takes")
struct DocumentWriteRuleTests {
    private static func open(_ directory: TemporaryDirectory, rule: RecordingRule) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        options.writeRule = rule
        return try Database(at: directory.url.appendingPathComponent("db"), options: options)
    }

    @Test("put, batches, replicated writes, attachment edits and deletions pass the rule; design and _local documents do not")
    func everyPath() async throws {
        let directory = TemporaryDirectory()
        let rule = RecordingRule()
        let db = try Self.open(directory, rule: rule)
        await #expect(throws: DocumentError.self) { try await db.put(#"{"_id":"a","refuse":true}"#) }
        await #expect(throws: DocumentError.self) { try await db.write { try $0.put(#"{"_id":"b","refuse":true}"#) } }
        let replicated = try await db.putReplicated([#"{"_id":"c","_rev":"1-0123456789abcdef0123456789abcdef","refuse":true}"#])
        guard case .failure = replicated[0] else { Issue.record("a replicated write passed the rule"); return }
        #expect(try await db.document("a") == nil)
        #expect(try await db.document("b") == nil)
        #expect(try await db.document("c") == nil)

        // A locked document: neither an attachment nor a deletion gets past the rule.
        let locked = try await db.put(#"{"_id":"l","locked":true}"#)
        await #expect(throws: DocumentError.self) {
            try await db.putAttachment(Blob(data: Data("x".utf8)), named: "x.txt", of: "l", revision: locked.revision)
        }
        await #expect(throws: DocumentError.self) { try await db.delete("l", revision: locked.revision) }
        #expect(try await db.document("l")?.revision == locked.revision)

        // Design and local documents are not the rule's.
        try await db.put(#"{"_id":"_design/d","refuse":true}"#)
        try await db.put(#"{"_id":"_local/x","refuse":true}"#)
        #expect(!rule.seen.withLock { $0.contains { $0.id.hasPrefix("_design/") || $0.id.hasPrefix("_local/") } })
        #expect(rule.seen.withLock { $0.first { $0.id == "l" && $0.hadOld } } != nil)

        // The writer bound for a write is the one the rule sees.
        let context = Database.ValidationContext(userContext: UserContext(name: "ann", roles: []))
        try await Database.$validationContext.withValue(context) { _ = try await db.put(#"{"_id":"n"}"#) }
        #expect(rule.seen.withLock { $0.last?.writer } == "ann")
    }
}
