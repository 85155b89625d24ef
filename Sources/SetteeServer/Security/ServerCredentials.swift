import Foundation
import SetteeCore
import Settee
import Synchronization

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
    private let administrators: Mutex<[String: PasswordHash]>
    /// Passwords recently verified, as a fast keyed hash of (name, salt,
    /// password): as `couch_passwords_cache`, so Basic auth on every request
    /// costs PBKDF2 once, not each time.
    private let verified = Mutex<[String: [UInt8]]>([:])

    /// Reads the stored administrators and secret (creating them when
    /// missing) and stores `configured` (name → password) hashed: a
    /// configured administrator whose stored hash does not verify its
    /// password is hashed anew.
    init(dataDirectory: URL, configured: [String: String], iterations: Int) throws {
        folder = dataDirectory.appendingPathComponent("_settee", isDirectory: true)
        self.iterations = iterations
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

    /// Writes `data` to `url` atomically, readable by this user only.
    static func writePrivately(_ data: Data, to url: URL) throws {
        try data.write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }
}
