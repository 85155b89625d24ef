import Foundation
import Settee

/// A contact, stored as a JSON document.
struct Contact: Codable, Sendable {
    var _rev: String?
    var type = "contact"
    var name: String
    var city: String
}

/// The view the address book shows: contacts by city, then name.
func designDocument(map: String) -> String {
    #"""
    {
      "_id": "_design/contacts",
      "views": {
        "by_city": {
          "map": "\#(map)",
          "reduce": "_count"
        }
      }
    }
    """#
}

/// The JavaScript view's second map, written in Swift: contacts by country
/// (Oslo and Bergen are in Norway), then name, counted.
struct ContactsByCountry: Indexer {
    let name = "contacts_by_country"
    let version = "1"
    var reduce: ReduceFunction? { .count }

    func map(_ document: IndexedDocument, _ emit: Emitter) throws {
        guard document["type"] == "contact", let city = document["city"]?.stringValue else { return }
        emit([.string(city == "Oslo" || city == "Bergen" ? "Norway" : "Elsewhere"), document["name"] ?? nil])
    }
}

let byCity = "function (doc) { if (doc.type === 'contact') emit([doc.city, doc.name], null); }"
let byCountry = "function (doc) { if (doc.type === 'contact') emit([doc.city === 'Oslo' || doc.city === 'Bergen' ? 'Norway' : 'Elsewhere', doc.name], null); }"

@main
struct AddressBook {
    static func main() async throws {
        // A database and a folder of design documents in a fresh temporary directory.
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("addressbook-\(UUID().uuidString)")
        let designs = home.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: designs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let designFile = designs.appendingPathComponent("contacts.json")
        try Data(designDocument(map: byCity).utf8).write(to: designFile)

        let db = try Database(at: home.appendingPathComponent("db"))
        try await db.loadDesignDocuments(from: designs)

        // Hot reload: a task that keeps the folder's design documents live.
        let watcher = Task {
            for try await reload in db.watchDesignDocuments(in: designs) {
                for loaded in reload.loaded where !loaded.changedViews.isEmpty {
                    print("↻ reloaded \(loaded.designDocument.id): new \(loaded.changedViews.joined(separator: ", "))")
                }
                for error in reload.errors { print("✗ \(error)") }
            }
        }

        // The screen: a live query of a typed view, redrawn each time its rows change.
        let byPlace = db.view("contacts/by_city", key: [String].self, value: JSONValue.self)
        let screen = Task {
            for try await rows in byPlace.liveQuery(ViewQueryOptions(reduce: false)) {
                print("— \(rows.count) contacts —")
                for row in rows { print("  \(row.key[0]): \(row.key[1])") }
                if rows.contains(where: { $0.key[1] == "Zoë" }) { break }
            }
        }

        // Meanwhile, another task writes.
        let writer = Task {
            for (id, name, city) in [("ann", "Ann", "Oslo"), ("bob", "Bob", "Bergen"), ("cid", "Cid", "Lyon")] {
                try await db.put(Contact(name: name, city: city), id: id)
                try await Task.sleep(for: .milliseconds(200))
            }
            // A note is not a contact: the screen is not redrawn.
            try await db.put(#"{"_id": "note-1", "type": "note", "text": "call Ann"}"#)

            // Two edits in one transaction: both show, or neither.
            try await db.write { batch in
                var ann = try batch.get("ann", as: Contact.self)!
                ann.city = "Bergen"
                try batch.put(ann, id: "ann")
                try batch.delete("cid", revision: nil)
            }
            try await Task.sleep(for: .milliseconds(200))

            // Someone edits the design document: the view is rebuilt and the screen redrawn.
            try Data(designDocument(map: byCountry).utf8).write(to: designFile)
            try await Task.sleep(for: .milliseconds(500))

            // A typed read that does not fit its type is an error with a stable code.
            struct Strict: Decodable { var name: String; var age: Int }
            do {
                _ = try await db.get("bob", as: Strict.self)
            } catch let error as CodingError {
                print("✗ \(error)")  // names the document and the member that does not fit
            }
            try await db.put(Contact(name: "Zoë", city: "Oslo"), id: "zoe")
        }

        try await writer.value
        try await screen.value
        watcher.cancel()
        _ = try? await watcher.value

        // The same count asked of the JavaScript view and of the same view written in Swift.
        try db.register(ContactsByCountry())
        let javaScript = try await db.query("contacts/by_city", options: ViewQueryOptions(groupLevel: 1))
        let swift = try await db.query("contacts_by_country", options: ViewQueryOptions(groupLevel: 1))
        for row in try swift.rows(key: [String].self, value: Int.self) {
            print("\(row.key[0]): \(row.value) contact(s)")
        }
        print(javaScript.json == swift.json ? "JavaScript and Swift agree" : "✗ the views disagree")

        // A conflict: two screens edit the same contact; the second to save holds a stale revision.
        var here = try await db.get("zoe", as: Contact.self)!
        var there = here
        here.city = "Bergen"
        try await db.put(here, id: "zoe")
        there.city = "Lyon"
        do {
            try await db.put(there, id: "zoe")
        } catch SetteeErrorCode.conflict {
            print("✗ zoe changed since it was read: re-read and apply the edit again")
            let merged = try await db.update("zoe", as: Contact.self) { $0.city = "Lyon" }
            print("zoe now lives in \(merged.city)")
        }
        db.close()
    }
}
