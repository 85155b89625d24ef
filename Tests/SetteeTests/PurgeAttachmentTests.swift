import Foundation
import Testing
@testable import Settee

/// A purged document's attachments go with it: a body only it used is removed
/// in the purge's transaction, one another document shares stays.
@Suite("Purge and attachments")
struct PurgeAttachmentTests {
    @Test("Purging a document releases its attachments: an unshared body is removed, a shared one stays for the other document")
    func purgeReleasesAttachments() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        // "aGVsbG8=" is "hello", shared by a and b; "b25seQ==" ("only") is a's alone.
        try db.put(#"{"_id":"a","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="},"y.txt":{"content_type":"text/plain","data":"b25seQ=="}}}"#)
        try db.put(#"{"_id":"b","_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#)
        _ = try db.purge("a")
        #expect(try db.store.attachmentProblems() == [])
        let report = try db.verify()
        #expect(report.isIntact, "\(report.problems)")
        let shared = try #require(try db.attachment("x.txt", of: "b"))
        #expect(shared.data == Data("hello".utf8))
        // An expired document purged on being written anew releases its attachments too.
        try db.put(#"{"_id":"c","_attachments":{"z.txt":{"content_type":"text/plain","data":"b25seQ=="}}}"#)
        try db.setExpiration(Date(timeIntervalSinceNow: -1), for: "c")
        try db.put(#"{"_id":"c","n":1}"#)
        #expect(try db.store.attachmentProblems() == [])
    }
}
