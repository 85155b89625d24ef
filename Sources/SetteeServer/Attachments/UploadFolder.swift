import Foundation

/// `DATA/.uploads`: attachment bodies being received, each in a file of its
/// own until it is stored in its database. A file left there was an upload
/// cut short by a crash: the server removes them all when it starts.
enum UploadFolder {
    /// The folder of in-flight uploads under `dataDirectory`.
    static func url(in dataDirectory: URL) -> URL {
        dataDirectory.appendingPathComponent(".uploads", isDirectory: true)
    }

    /// Removes the uploads a previous run left behind; the number removed.
    @discardableResult
    static func removeLeftovers(in dataDirectory: URL) -> Int {
        let folder = url(in: dataDirectory)
        let files = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
        var removed = 0
        for file in files where (try? FileManager.default.removeItem(at: file)) != nil { removed += 1 }
        return removed
    }
}
