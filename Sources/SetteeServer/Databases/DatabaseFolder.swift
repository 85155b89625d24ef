public import Foundation
public import Logging
public import Settee
import Synchronization
import HTTPTypes

/// The databases `settee serve` serves: one Settee database per
/// subdirectory of one folder, opened on first use and kept open.
///
/// A database's directory is its name with `/` written `%2F` (CouchDB allows
/// `/` in names); names are checked against CouchDB's rule before any path
/// is made of them, so no name reaches outside the folder.
public final class DatabaseFolder: Sendable {
    /// The folder holding the databases.
    public let url: URL
    let options: Database.Options
    let logger: Logger
    private let open = Mutex<[String: Database]>([:])
    /// Each database's security object once read (``security(of:)``), until it is set again or the database deleted.
    let securityObjects = Mutex<[String: SecurityObject]>([:])

    /// The most PBKDF2 iterations a `_users` document may ask of a login.
    let maximumPasswordIterations: Int
    /// `[chttpd_auth] authentication_db`: a users database besides `_users` and `…/_users`.
    private let authenticationDatabase = Mutex("_users")

    /// The system database `name` is, if any (``SystemDatabase``).
    func systemDatabase(_ name: String) -> SystemDatabase? {
        SystemDatabase(name: name, authenticationDatabase: authenticationDatabase.withLock { $0 })
    }

    /// Makes `name` the authentication database: it and the one before are
    /// closed, to be opened again with the rules they now have.
    func setAuthenticationDatabase(_ name: String) {
        let previous = authenticationDatabase.withLock { current in
            defer { current = name }
            return current
        }
        guard previous != name else { return }
        for changed in [previous, name] {
            let database = open.withLock { $0.removeValue(forKey: changed) }
            database?.close()
        }
    }

    /// Serves the databases in `url`, creating the folder when missing.
    public convenience init(url: URL, options: Database.Options = Database.Options(), logger: Logger = Database.quietLogger) throws {
        try self.init(url: url, options: options, logger: logger, maximumPasswordIterations: 1_000_000)
    }

    init(url: URL, options: Database.Options, logger: Logger, maximumPasswordIterations: Int) throws {
        self.url = url
        self.options = options
        self.logger = logger
        self.maximumPasswordIterations = maximumPasswordIterations
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// CouchDB's rule for database names (`couch_db:validate_dbname/1`).
    static let systemDatabases: Set<String> = ["_users", "_replicator", "_global_changes"]

    /// Whether `name` is a database name CouchDB accepts.
    static func isValidName(_ name: String) -> Bool {
        if systemDatabases.contains(name) { return true }
        guard let first = name.utf8.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z"), name.utf8.count <= 238 else {
            return false
        }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "("), UInt8(ascii: ")"),
                 UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "/"): true
            default: false
            }
        }
    }

    static func illegalName(_ name: String) -> CouchError {
        CouchError(.badRequest, "illegal_database_name",
                   "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
    }

    /// The directory of the database `name` (checked).
    func directory(of name: String) throws(CouchError) -> URL {
        guard Self.isValidName(name) else { throw Self.illegalName(name) }
        return url.appendingPathComponent(name.replacingOccurrences(of: "/", with: "%2F"), isDirectory: true)
    }

    /// The names of the databases in the folder, sorted as `_all_dbs` lists them.
    public func names() throws -> [String] {
        let entries = try FileManager.default.contentsOfDirectory(atPath: url.path)
        return entries.compactMap { entry -> String? in
            let name = entry.replacingOccurrences(of: "%2F", with: "/")
            guard Self.isValidName(name) else { return nil }
            return FileManager.default.fileExists(atPath: url.appendingPathComponent(entry).appendingPathComponent("data.mdb").path) ? name : nil
        }.sorted()
    }

    /// Whether the database exists.
    public func exists(_ name: String) -> Bool {
        guard Self.isValidName(name) else { return false }
        if open.withLock({ $0[name] }) != nil { return true }
        guard let directory = try? directory(of: name) else { return false }
        return FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path)
    }

    /// The open database `name`.
    /// - Throws: `not_found` when it does not exist, `illegal_database_name`.
    public func database(_ name: String) throws -> Database {
        guard Self.isValidName(name) else { throw Self.illegalName(name) }
        if let database = open.withLock({ $0[name] }) { return database }
        let directory = try directory(of: name)
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) else {
            throw CouchError.databaseMissing
        }
        return try opened(name, at: directory, creating: false)
    }

    private func opened(_ name: String, at directory: URL, creating: Bool) throws -> Database {
        var options = options
        options.createIfMissing = creating
        // `_users` and `_replicator` check every write, whatever endpoint made it.
        if let system = systemDatabase(name) { options.writeRule = system.writeRule(maximumIterations: maximumPasswordIterations) }
        // Opening outside the lock: two first requests may both open; the first kept wins.
        let database = try Database(at: directory, options: options, logger: logger)
        if !options.readOnly { try DatabaseLimits(directory: directory).moveRevisionsLimit(into: database) }
        return open.withLock { open in
            if let kept = open[name] { database.close(); return kept }
            open[name] = database
            return database
        }
    }

    /// Creates the database `name`, partitioned if asked (`Database.makePartitioned()`).
    /// - Throws: `file_exists` (412) when it exists, `illegal_database_name` (400),
    ///   `bad_request` for a partitioned system database.
    @discardableResult
    public func create(_ name: String, partitioned: Bool = false) throws -> Database {
        let directory = try directory(of: name)
        if partitioned, Self.systemDatabases.contains(name) || name.hasSuffix("/_users") || name.hasSuffix("/_replicator") {
            throw CouchError.badRequest("Cannot partition a system database")
        }
        if exists(name) {
            throw CouchError(.preconditionFailed, "file_exists", "The database could not be created, the file already exists.")
        }
        do {
            let database = try opened(name, at: directory, creating: true)
            if partitioned { try database.makePartitioned() }
            return database
        } catch {
            // A database that could not be made (a full disk) leaves nothing behind: no half-made folder to open later.
            open.withLock { $0.removeValue(forKey: name) }?.close()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Deletes the database `name` and its files.
    /// - Throws: `not_found` when it does not exist.
    public func delete(_ name: String) throws {
        let directory = try directory(of: name)
        guard exists(name) else { throw CouchError.databaseMissing }
        let database = open.withLock { $0.removeValue(forKey: name) }
        securityObjects.withLock { _ = $0.removeValue(forKey: name) }
        database?.close()
        try FileManager.default.removeItem(at: directory)
    }

    /// Closes every open database.
    public func closeAll() {
        let all = open.withLock { open in
            defer { open.removeAll() }
            return Array(open.values)
        }
        for database in all { database.close() }
    }
}
