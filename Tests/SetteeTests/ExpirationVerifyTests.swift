import Foundation
import Testing
@testable import Settee

/// `verify` checks the two expiration tables against each other and the documents.
@Suite("Expiration tables under verify")
struct ExpirationVerifyTests {
    let directory = TemporaryDirectory()

    @Test("an expiration whose entry by time is missing, or of a missing document, is reported")
    func damagedExpirations() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(#"{"_id": "a"}"#)
        try db.put(#"{"_id": "b"}"#)
        let later = Date(timeIntervalSince1970: 4_000_000_000)
        try db.setExpiration(later, for: "a")
        try db.setExpiration(later, for: "b")
        #expect(try db.verify().problems.isEmpty)
        let times = try #require(db.store.expirationTimes)
        let expirations = try #require(db.store.expirations)
        try db.environment.write { transaction in
            try transaction.clear(times)
            _ = try transaction.delete(db.store.docs, Array("b".utf8))
            try transaction.put(expirations, Array("c".utf8), [UInt8](repeating: 0, count: 3))
        }
        let problems = try db.verify().problems
        #expect(problems.contains(#"expirations: document "a" expires at a time the table by time does not list"#))
        #expect(problems.contains(#"expirations: document "b" has an expiration time but does not exist"#))
        #expect(problems.contains(#"expirations: document "c" has a time of 3 bytes where 8 are stored"#))
    }
}
