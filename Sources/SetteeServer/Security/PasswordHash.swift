import Foundation
import Settee
import HTTPTypes
import SetteeCore

/// A password as CouchDB keeps it: PBKDF2 with HMAC-SHA-256 over the
/// password and a random salt (`couch_passwords:pbkdf2/4`), never the password.
///
/// Server administrators are written `-pbkdf2:sha256-KEY,SALT,ITERATIONS`
/// (`couch_passwords:hash_admin_password/1`); `_users` documents carry the
/// same parts as `derived_key`, `salt`, `iterations`, `pbkdf2_prf` and
/// `password_scheme: "pbkdf2"`.
struct PasswordHash: Sendable, Equatable {
    /// The derived key, lowercase hexadecimal.
    var derivedKey: String
    /// The salt, used as the bytes of its text (32 hexadecimal digits when made here).
    var salt: String
    /// PBKDF2's iteration count.
    var iterations: Int

    /// CouchDB 3.5's iteration count (`[chttpd_auth] iterations`).
    static let defaultIterations = 600_000

    /// `password` hashed with `salt`, a new random one by default.
    init(hashing password: String, iterations: Int, salt: String = Self.randomHex(16)) {
        self.salt = salt
        self.iterations = iterations
        derivedKey = PBKDF2SHA256.derive(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations).hexString
    }

    init(derivedKey: String, salt: String, iterations: Int) {
        self.derivedKey = derivedKey
        self.salt = salt
        self.iterations = iterations
    }

    /// Reads `-pbkdf2:sha256-KEY,SALT,ITERATIONS` (and `-pbkdf2-KEY,SALT,ITERATIONS`
    /// when its key has SHA-256's length); `nil` for anything else.
    init?(administratorForm text: String) {
        let body: Substring
        if text.hasPrefix("-pbkdf2:sha256-") {
            body = text.dropFirst("-pbkdf2:sha256-".count)
        } else {
            return nil
        }
        let parts = body.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3, let iterations = Int(parts[2]), iterations > 0 else { return nil }
        self.init(derivedKey: String(parts[0]), salt: String(parts[1]), iterations: iterations)
    }

    /// `-pbkdf2:sha256-KEY,SALT,ITERATIONS`.
    var administratorForm: String { "-pbkdf2:sha256-\(derivedKey),\(salt),\(iterations)" }

    /// The members a `_users` document keeps instead of its `password`, in CouchDB's order.
    var userDocumentMembers: [(key: String, value: JSONValue)] {
        [("password_scheme", "pbkdf2"), ("pbkdf2_prf", "sha256"), ("salt", .string(salt)),
         ("iterations", .number(Double(iterations))), ("derived_key", .string(derivedKey))]
    }

    /// The hash a `_users` document carries.
    /// - Throws: CouchDB's `forbidden` when its scheme or PRF is not PBKDF2
    ///   with SHA-256, or its iteration count is not an integer from 1 to
    ///   `maximumIterations` (a login never costs more than that).
    init?(userDocument document: JSONValue, maximumIterations: Int) throws(CouchError) {
        guard let derivedKey = document["derived_key"]?.stringValue, let salt = document["salt"]?.stringValue else { return nil }
        guard document["password_scheme"]?.stringValue == "pbkdf2" else {
            throw CouchError(.forbidden, "forbidden", "password_scheme is not supported: Settee checks pbkdf2 with sha256")
        }
        guard (document["pbkdf2_prf"]?.stringValue ?? "sha") == "sha256" else {
            throw CouchError(.forbidden, "forbidden", "PRF is invalid")
        }
        let iterations = try Self.iterations(document["iterations"] ?? 10_000, maximum: maximumIterations)
        self.init(derivedKey: derivedKey, salt: salt, iterations: iterations)
    }

    /// An iteration count as an `Int` from 1 to `maximum`.
    /// - Throws: `forbidden` for anything else (a fraction, a string, 1e300).
    static func iterations(_ value: JSONValue, maximum: Int) throws(CouchError) -> Int {
        guard let number = value.doubleValue, number.isFinite, number == number.rounded() else {
            throw CouchError(.forbidden, "forbidden", "doc.iterations must be an integer")
        }
        guard number >= 1 else { throw CouchError(.forbidden, "forbidden", "Iteration count is too low for this server") }
        guard number <= Double(maximum) else { throw CouchError(.forbidden, "forbidden", "Iteration count is too high for this server") }
        return Int(number)
    }

    /// Refuses a `_users` document whose password fields no login could
    /// use safely: a scheme other than `pbkdf2` or `simple`, an iteration
    /// count that is not an integer from 1 to `maximumIterations`, a
    /// `derived_key` or `salt` that is not a string of reasonable length.
    static func checkStored(_ document: JSONValue, maximumIterations: Int) throws(CouchError) {
        let fields = ["password_scheme", "derived_key", "salt", "iterations", "pbkdf2_prf", "password_sha"]
        guard fields.contains(where: { document[$0] != nil }) else { return }
        func forbidden(_ reason: String) -> CouchError { CouchError(.forbidden, "forbidden", reason) }
        switch document["password_scheme"]?.stringValue {
        case "pbkdf2":
            guard let key = document["derived_key"]?.stringValue, key.utf8.count <= 1024,
                  key.utf8.allSatisfy({ $0 < 0x80 && Character(Unicode.Scalar($0)).isHexDigit }) else {
                throw forbidden("doc.derived_key must be a string of hexadecimal digits")
            }
            guard let salt = document["salt"]?.stringValue, salt.utf8.count <= 1024 else {
                throw forbidden("doc.salt must be a string")
            }
            if let prf = document["pbkdf2_prf"], prf != "sha256", prf != "sha" { throw forbidden("doc.pbkdf2_prf must be sha256") }
            if let iterations = document["iterations"] { _ = try Self.iterations(iterations, maximum: maximumIterations) }
        case "simple":
            guard document["password_sha"]?.stringValue != nil, document["salt"]?.stringValue != nil else {
                throw forbidden("doc.password_sha and doc.salt must be strings")
            }
        default:
            throw forbidden("doc.password_scheme must be pbkdf2")
        }
    }

    /// Whether `password` is the one hashed, compared in constant time.
    func verifies(_ password: String) -> Bool {
        let key = PBKDF2SHA256.derive(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations).hexString
        return HMACSHA256.constantTimeEqual(Array(key.utf8), Array(derivedKey.utf8))
    }

    /// `count` random bytes as hexadecimal (CouchDB's `couch_uuids:random()` for `count` 16).
    static func randomHex(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexString
    }
}
