/// HMAC (RFC 2104) over SHA-256: the keyed hash CouchDB signs `AuthSession`
/// cookies with and PBKDF2 iterates.
package struct HMACSHA256: Sendable {
    /// The hash with the inner padded key absorbed.
    private let inner: SHA256
    /// The hash with the outer padded key absorbed.
    private let outer: SHA256

    /// A keyed hash; a key longer than a block is hashed first, as RFC 2104 says.
    package init(key: some Sequence<UInt8>) {
        var key = Array(key)
        if key.count > 64 {
            var hasher = SHA256()
            hasher.update(key)
            key = hasher.finalize()
        }
        key += [UInt8](repeating: 0, count: 64 - key.count)
        var inner = SHA256(), outer = SHA256()
        inner.update(key.map { $0 ^ 0x36 })
        outer.update(key.map { $0 ^ 0x5c })
        self.inner = inner
        self.outer = outer
    }

    /// The 32-byte authentication code of `message`.
    package func authenticationCode(_ message: some Sequence<UInt8>) -> [UInt8] {
        var inner = inner
        inner.update(message)
        var outer = outer
        outer.update(inner.finalize())
        return outer.finalize()
    }

    /// Whether `a` and `b` are equal, in a time that depends only on their
    /// lengths (never on where they first differ), as `crypto:hash_equals`.
    package static func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// PBKDF2 (RFC 8018) with HMAC-SHA-256: CouchDB's password hash
/// (`couch_passwords:pbkdf2(sha256, …)`).
package enum PBKDF2SHA256 {
    /// The key derived from `password` and `salt` in `iterations` rounds,
    /// `keyLength` bytes long (32 by default, the digest's length, as CouchDB).
    package static func derive(password: some Sequence<UInt8>, salt: some Sequence<UInt8>, iterations: Int,
                               keyLength: Int = 32) -> [UInt8] {
        precondition(iterations > 0 && keyLength > 0, "PBKDF2 needs at least one iteration and one byte of key")
        let hmac = HMACSHA256(key: password)
        let salt = Array(salt)
        var derived: [UInt8] = []
        derived.reserveCapacity(keyLength)
        var block: UInt32 = 1
        while derived.count < keyLength {
            var u = hmac.authenticationCode(salt + withUnsafeBytes(of: block.bigEndian) { Array($0) })
            var t = u
            for _ in 1..<iterations {
                u = hmac.authenticationCode(u)
                for index in 0..<32 { t[index] ^= u[index] }
            }
            derived += t.prefix(keyLength - derived.count)
            block += 1
        }
        return derived
    }
}
