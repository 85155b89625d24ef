import ArgumentParser
import Foundation
import Settee

struct ExpireCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expire", abstract: "Set or clear when a document expires (it is purged once its time has passed).",
        discussion: "Give exactly one of --in, --at and --clear. Past its time the document reads as missing; it is purged "
            + "when a database is opened for writing, by queries, and while a process keeps the database open.")

    @Argument(help: "The document's id.")
    var id: String

    @Option(name: .customLong("in"), help: "Expire this many seconds from now.")
    var seconds: Double?

    @Option(help: "Expire at this time (ISO 8601, e.g. 2030-01-01T00:00:00Z).")
    var at: String?

    @Flag(help: "Clear the document's expiration.")
    var clear = false

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        let given = [seconds != nil, at != nil, clear].filter { $0 }.count
        if given != 1 { throw ValidationError("give exactly one of --in SECONDS, --at ISO8601 and --clear") }
        if let seconds, !(seconds.isFinite && seconds >= 0) { throw ValidationError("--in must be a number of seconds, 0 or more, not \(seconds)") }
        if let at, ISO8601Time.parse(at) == nil {
            throw ValidationError("--at must be an ISO 8601 time such as 2030-01-01T00:00:00Z, not \(at)")
        }
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let date: Date? = clear ? nil : seconds.map { Date().addingTimeInterval($0) } ?? at.flatMap(ISO8601Time.parse)
            try db.setExpiration(date, for: id)
            printJSON(["ok": true, "id": .string(id), "expires": date.map { .string(ISO8601Time.format($0)) } ?? .null])
        }
    }
}

struct ExpiringCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expiring", abstract: "List the documents that expire before a time, soonest first.")

    @Option(help: "List those expiring before this time (ISO 8601, e.g. 2030-01-01T00:00:00Z).")
    var before: String

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        if ISO8601Time.parse(before) == nil {
            throw ValidationError("--before must be an ISO 8601 time such as 2030-01-01T00:00:00Z, not \(before)")
        }
    }

    func run() throws {
        try reportingErrors {
            let db = try database.open(creating: false)
            let rows: [JSONValue] = try db.documentsExpiring(before: ISO8601Time.parse(before)!).map {
                ["id": .string($0.id), "expires": .string(ISO8601Time.format($0.expiration))]
            }
            printJSON(["rows": .array(rows)])
        }
    }
}

/// ISO 8601 times as the expiration commands take and print them: with or
/// without fractional seconds; printed in UTC, with milliseconds when there are any.
enum ISO8601Time {
    static func parse(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        if date.timeIntervalSince1970.rounded(.down) != date.timeIntervalSince1970 {
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        }
        return formatter.string(from: date)
    }
}
