import Foundation

/// A fresh directory for one test, removed when the value is released.
final class TemporaryDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("settee-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func file(_ name: String, contents: String) -> URL {
        let file = url.appendingPathComponent(name)
        try! Data(contents.utf8).write(to: file)
        return file
    }
}
