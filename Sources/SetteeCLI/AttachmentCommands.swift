import ArgumentParser
import Foundation
import Settee

struct AttachmentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachment",
        abstract: "Put, get or delete a document's attachment (its bytes streamed from and to files).",
        subcommands: [AttachmentPutCommand.self, AttachmentGetCommand.self, AttachmentDeleteCommand.self])
}

/// Parses `--rev` values the way every command does.
private func revision(_ text: String?) throws -> Revision? {
    guard let text else { return nil }
    guard let revision = Revision(text) else { throw ValidationError("--rev must look like N-<id> (a generation, a dash, an id), not \(text)") }
    return revision
}

struct AttachmentPutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put", abstract: "Add a file as an attachment of a document, or replace the one of that name.",
        discussion: """
            The file is read a chunk at a time (once for its digest, once while it is stored), so files of \
            hundreds of megabytes take little memory. Without --rev the document must not exist yet: it is \
            created holding only the attachment. Prints {"ok":true,"id":…,"rev":…}.
            """)

    @Argument(help: "The document's id.")
    var id: String

    @Argument(help: "The attachment's name.")
    var name: String

    @Argument(help: "The file to store.")
    var file: String

    @Option(help: "The document's current revision (none for a new document).")
    var rev: String?

    @Option(name: .customLong("content-type"), help: "The attachment's MIME type (by default from the attachment's extension, else the file's, else application/octet-stream).")
    var contentType: String?

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        _ = try revision(rev)
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let url = URL(fileURLWithPath: file)
            // The attachment's own name says what it is (cover.png), else the file's.
            let named = Self.contentType(forExtension: (name as NSString).pathExtension)
            let type = contentType ?? (named != "application/octet-stream" ? named : Self.contentType(forExtension: url.pathExtension))
            let result = try db.putAttachment(Blob(file: url, contentType: type), named: name, of: id, revision: try revision(rev))
            printJSON(["ok": true, "id": .string(result.id), "rev": .string(result.revision.description)])
        }
    }

    /// A few common types by file extension.
    static func contentType(forExtension pathExtension: String) -> String {
        switch pathExtension.lowercased() {
        case "txt", "text": "text/plain"
        case "json": "application/json"
        case "html", "htm": "text/html"
        case "css": "text/css"
        case "js": "application/javascript"
        case "csv": "text/csv"
        case "xml": "application/xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "svg": "image/svg+xml"
        case "pdf": "application/pdf"
        case "zip": "application/zip"
        default: "application/octet-stream"
        }
    }
}

struct AttachmentGetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Write an attachment's bytes to standard output, or to a file.",
        discussion: """
            The bytes are written a chunk at a time, as they are read. With --output, the attachment's \
            stub (content_type, revpos, digest, length) is printed as JSON once the file is written.
            """)

    @Argument(help: "The document's id.")
    var id: String

    @Argument(help: "The attachment's name.")
    var name: String

    @Option(name: .shortAndLong, help: "Write the bytes to this file (created or replaced) instead of standard output.")
    var output: String?

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            if let output {
                let blob = try db.writeAttachment(name, of: id, to: URL(fileURLWithPath: output))
                printJSON([
                    "ok": true, "id": .string(id), "name": .string(name), "content_type": .string(blob.contentType),
                    "revpos": .number(Double(blob.revpos ?? 0)), "digest": .string(blob.digest ?? ""),
                    "length": .number(Double(blob.length ?? 0)),
                ])
                return
            }
            try db.readAttachment(name, of: id) { chunk in
                var offset = 0
                while offset < chunk.count {
                    let written = Foundation.write(STDOUT_FILENO, chunk.baseAddress! + offset, chunk.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "writing the attachment to standard output: \(String(cString: strerror(errno)))"])
                    }
                    offset += written
                }
            }
        }
    }
}

struct AttachmentDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Remove an attachment from a document (its bytes go when no document refers to them).")

    @Argument(help: "The document's id.")
    var id: String

    @Argument(help: "The attachment's name.")
    var name: String

    @Option(help: "The document's current revision.")
    var rev: String

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        _ = try revision(rev)
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open()
            let result = try db.removeAttachment(name, of: id, revision: try revision(rev)!)
            printJSON(["ok": true, "id": .string(result.id), "rev": .string(result.revision.description)])
        }
    }
}
