import Foundation
import SetteeCore
import Settee
import Synchronization
import HTTPTypes

/// The server's own secrets, kept in `DIR/_settee/` (a name no database can
/// have): the administrators' password hashes (`admins.json`, never a
/// password) and the secret `AuthSession` cookies are signed with (`secret`),
/// both readable by the server's user only.
final class ServerCredentials: Sendable {
    /// `DIR/_settee`.
    let folder: URL
    /// The cookie-signing secret (CouchDB's `[chttpd_auth] secret`).
    let secret: String
    /// PBKDF2 iterations for new hashes.
    let iterations: Int
    /// The most PBKDF2 iterations a stored hash may ask of a login.
    let maximumIterations: Int
    /// Failed logins by client address and name, in the last `lockoutLifetime`.
    private let failures = Mutex<[String: (count: Int, first: ContinuousClock.Instant)]>([:])
    /// How many failures lock a name out from an address (`[chttpd_auth_lockout] threshold`).
    static let lockoutThreshold = 5
    /// How long failures are remembered (`[chttpd_auth_lockout] max_lifetime`, 5 minutes).
    static let lockoutLifetime: Duration = .seconds(300)
    /// The most addresses and names remembered (`[chttpd_auth_lockout] max_objects`).
    static let lockoutEntries = 10_000
    private let administrators: Mutex<[String: PasswordHash]>
    /// The administrators `admins.json` holds (those set with `X-Couch-Persist: false` are not).
    private let storedAdministrators: Mutex<[String: PasswordHash]>
    /// Passwords recently verified, as a fast keyed hash of (name, salt,
    /// password): as `couch_passwords_cache`, so Basic auth on every request
    /// costs PBKDF2 once, not each time.
    private let verified = Mutex<[String: [UInt8]]>([:])

    /// Reads the stored administrators and secret (creating them when
    /// missing) and stores `configured` (name → password) hashed: a
    /// configured administrator whose stored hash does not verify its
    /// password is hashed anew.
    init(dataDirectory: URL, configured: [String: String], iterations: Int, maximumIterations: Int = 1_000_000) throws {
        folder = dataDirectory.appendingPathComponent("_settee", isDirectory: true)
        self.iterations = iterations
        self.maximumIterations = max(maximumIterations, iterations)
        let manager = FileManager.default
        try manager.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let secretFile = folder.appendingPathComponent("secret")
        if let stored = try? String(contentsOf: secretFile, encoding: .utf8), stored.count >= 32 {
            secret = stored.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            secret = PasswordHash.randomHex(32)
            try Self.writePrivately(Data(secret.utf8), to: secretFile)
        }
        var administrators: [String: PasswordHash] = [:]
        let adminsFile = folder.appendingPathComponent("admins.json")
        if let data = try? Data(contentsOf: adminsFile) {
            guard case .object(let members) = try JSONValue(parsing: String(decoding: data, as: UTF8.self)) else {
                throw CouchError(.internalServerError, "invalid_admins", "\(adminsFile.path) is not a JSON object of name: \"-pbkdf2:sha256-…\"")
            }
            for (name, value) in members {
                guard let hash = value.stringValue.flatMap(PasswordHash.init(administratorForm:)) else {
                    throw CouchError(.internalServerError, "invalid_admins", "\(adminsFile.path): administrator \"\(name)\" is not stored as -pbkdf2:sha256-KEY,SALT,ITERATIONS")
                }
                administrators[name] = hash
            }
        }
        var changed = false
        for (name, password) in configured where administrators[name]?.verifies(password) != true {
            administrators[name] = PasswordHash(hashing: password, iterations: iterations)
            changed = true
        }
        if changed {
            let json = JSONValue.object(administrators.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value.administratorForm)) })
            try Self.writePrivately(Data(json.jsonText.utf8), to: adminsFile)
        }
        self.administrators = Mutex(administrators)
        storedAdministrators = Mutex(administrators)
    }

    /// Every administrator's hash in the form `[admins]` shows, by name.
    var administratorForms: [String: String] { administrators.withLock { $0.mapValues(\.administratorForm) } }

    /// Adds or replaces the administrator `name` (kept in `admins.json` when
    /// `persist`); returns the hash it replaced.
    func setAdministrator(_ name: String, _ hash: PasswordHash, persist: Bool) throws -> PasswordHash? {
        try changeAdministrator(name, persist: persist) { $0 = hash }
    }

    /// Removes the administrator `name` (from `admins.json` too when `persist`); returns its hash.
    func removeAdministrator(_ name: String, persist: Bool) throws -> PasswordHash? {
        try changeAdministrator(name, persist: persist) { $0 = nil }
    }

    private func changeAdministrator(_ name: String, persist: Bool, _ edit: (inout PasswordHash?) -> Void) throws -> PasswordHash? {
        if persist {
            try storedAdministrators.withLock { stored in
                var changed = stored
                edit(&changed[name])
                let json = JSONValue.object(changed.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value.administratorForm)) })
                try Self.writePrivately(Data(json.jsonText.utf8), to: folder.appendingPathComponent("admins.json"))
                stored = changed
            }
        }
        return administrators.withLock { administrators in
            let previous = administrators[name]
            edit(&administrators[name])
            return previous
        }
    }

    /// Whether any administrator exists (so the server is not an "admin party").
    var hasAdministrators: Bool { !administrators.withLock { $0.isEmpty } }

    /// The administrator `name`'s hash.
    func administrator(_ name: String) -> PasswordHash? { administrators.withLock { $0[name] } }

    /// Whether `password` is the one `hash` was made from; a verified
    /// password is remembered (as a keyed hash) so the next check is fast.
    func verify(_ password: String, name: String, against hash: PasswordHash) -> Bool {
        let cacheKey = "\(name)\u{0}\(hash.salt)\u{0}\(hash.derivedKey)"
        let fast = HMACSHA256(key: Array(secret.utf8)).authenticationCode(Array((cacheKey + "\u{0}" + password).utf8))
        if let known = verified.withLock({ $0[cacheKey] }) {
            return HMACSHA256.constantTimeEqual(known, fast)
        }
        // PBKDF2 takes a long while (600,000 rounds): the request thread's host may replace the thread meanwhile.
        guard BlockingWork.run({ hash.verifies(password) }) else { return false }
        verified.withLock { cache in
            if cache.count > 1000 { cache.removeAll() }
            cache[cacheKey] = fast
        }
        return true
    }

    // MARK: Lockout (CouchDB 3.4's `chttpd_auth_lockout`, mode `enforce`)

    static let lockedOut = CouchError(.forbidden, "forbidden", "Account is temporarily locked due to multiple authentication failures")

    /// Refuses a login of `name` from `peer` after ``lockoutThreshold``
    /// failures within ``lockoutLifetime``, before any password is checked.
    func checkLockout(name: String, peer: String) throws(CouchError) {
        let key = peer + "\u{0}" + name
        let locked = failures.withLock { failures -> Bool in
            guard let entry = failures[key] else { return false }
            if ContinuousClock.now - entry.first > Self.lockoutLifetime {
                failures[key] = nil
                return false
            }
            return entry.count >= Self.lockoutThreshold
        }
        if locked { throw Self.lockedOut }
    }

    /// Counts a failed login of `name` from `peer`; a success forgets them.
    func recordLogin(name: String, peer: String, succeeded: Bool) {
        let key = peer + "\u{0}" + name
        failures.withLock { failures in
            if succeeded { failures[key] = nil; return }
            if failures.count >= Self.lockoutEntries {
                let now = ContinuousClock.now
                failures = failures.filter { now - $0.value.first <= Self.lockoutLifetime }
                if failures.count >= Self.lockoutEntries { failures.removeAll() }
            }
            let entry = failures[key] ?? (0, ContinuousClock.now)
            failures[key] = (entry.count + 1, entry.first)
        }
    }

    /// Writes `data` to `url` atomically, readable by this user only.
    static func writePrivately(_ data: Data, to url: URL) throws {
        try data.write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }
}
