import Testing
import SetteeCore
@testable import Settee

@Suite("MD5 and SHA-256")
struct HashingTests {
    /// RFC 1321 appendix A.5 and FIPS 180 example messages, with their digests.
    static let vectors: [(message: String, md5: String, sha256: String)] = [
        ("", "d41d8cd98f00b204e9800998ecf8427e", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("a", "0cc175b9c0f1b6a831c399e269772661", "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0", "f7846f55cf23e14eebeab5b4e1550cad5b509e3348fbc4efa3a1413d393cb650"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b",
         "71c480df93d6ae2f1efad1447c66c9525e316218cf51fc8d9ed832f2daf18b73"),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f",
         "db4bfcbd4da0cd85a60c3c37d3fbd8805c77f15fc6b1fdfe614ee0a7c8fdb4c0"),
        (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a",
         "f371bc4a311f2b009eef952dd83ca80e2b60026c8e935592d0f9c308453c813e"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "8215ef0796a20bcaaae116d3876c664a",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("héllo wörld ☃", "7db2ea56c00e114f436840ec0e9d5e74", "197a152db0d9da8d291382523cbe9fc690eaed31f5b9d597814c825624770688"),
    ]

    @Test("standard test vectors", arguments: 0..<vectors.count)
    func standardVectors(index: Int) {
        let vector = Self.vectors[index]
        #expect(MD5.hexDigest(vector.message) == vector.md5)
        #expect(SHA256.hexDigest(vector.message) == vector.sha256)
        #expect(MD5.hexDigest(Array(vector.message.utf8)) == vector.md5)
        #expect(SHA256.hexDigest(Array(vector.message.utf8)) == vector.sha256)
    }

    @Test("one million 'a'")
    func millionA() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(MD5.hexDigest(message) == "7707d6ae4e027c70eea2a935c2296f21")
        #expect(SHA256.hexDigest(message) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Lengths around the padding boundaries (55/56 bytes leave or lack room for the
    /// length field; 64 and 120 straddle blocks), of the bytes `i % 251`.
    static let paddingVectors: [(length: Int, md5: String, sha256: String)] = [
        (55, "6912ee65fff2d9f9ce2508cddf8bcda0", "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "51fdd1acda72405dfdfa03fcb85896d7", "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (57, "5320ef4c17ef34a0cf2db763338d25eb", "2fe741af801cc238602ac0ec6a7b0c3a8a87c7fc7d7f02a3fe03d1c12eac4d8f"),
        (63, "48a6295221902e8e0938f773a7185e72", "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "b2d3f56bc197fd985d5965079b5e7148", "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "8bd7053801c768420faf816fadba971c", "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (119, "1c772251899a7ff007400b888d6b2042", "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "b7ba1efc6022e9ed272f00b8831e26e6", "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"),
        (128, "37eff01866ba3f538421b30b7cbefcac", "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"),
        (1000, "a24f1e3ef66950e1327f210e3997ba2c", "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"),
    ]

    static func pattern(_ length: Int) -> [UInt8] {
        (0..<length).map { UInt8($0 % 251) }
    }

    @Test("padding boundaries", arguments: 0..<paddingVectors.count)
    func paddingBoundaries(index: Int) {
        let vector = Self.paddingVectors[index]
        let message = Self.pattern(vector.length)
        message.withUnsafeBytes { bytes in
            #expect(MD5.hexDigest(bytes) == vector.md5)
            #expect(SHA256.hexDigest(bytes) == vector.sha256)
        }
    }

    @Test("chunked updates equal one-shot hashing, for every chunk size")
    func chunkedUpdates() {
        let message = Self.pattern(1000)
        let md5 = MD5.hash(message)
        let sha256 = SHA256.hash(message)
        for chunkSize in [1, 2, 3, 7, 55, 56, 63, 64, 65, 127, 128, 129, 333, 999, 1000] {
            var md5Hasher = MD5()
            var sha256Hasher = SHA256()
            var start = 0
            while start < message.count {
                let chunk = message[start..<min(start + chunkSize, message.count)]
                md5Hasher.update(chunk)
                chunk.withUnsafeBytes { sha256Hasher.update($0) }
                start += chunkSize
            }
            #expect(md5Hasher.finalize() == md5, "chunk size \(chunkSize)")
            #expect(sha256Hasher.finalize() == sha256, "chunk size \(chunkSize)")
        }
    }

    @Test("uneven chunk sequences and empty updates")
    func unevenChunks() {
        let message = Self.pattern(1000)
        var hasher = MD5()
        var sha = SHA256()
        var start = 0
        var size = 0
        while start < message.count {
            let end = min(start + size, message.count)
            hasher.update(message[start..<end])
            sha.update(message[start..<end])
            start = end
            size = (size * 7 + 3) % 150  // includes zero-length updates
        }
        #expect(hasher.finalize().hexString == "a24f1e3ef66950e1327f210e3997ba2c")
        #expect(sha.finalize().hexString == "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d")
    }

    @Test("finalize leaves the hasher usable")
    func finalizeIsNonDestructive() {
        var hasher = MD5()
        hasher.update("message ")
        _ = hasher.finalize()
        hasher.update("digest")
        #expect(hasher.finalize().hexString == "f96b697d7cb7938d525a2f31aaf161d0")
    }

    @Test("non-contiguous sequences")
    func nonContiguousSequence() {
        let message = (0..<1000).lazy.map { UInt8($0 % 251) }
        #expect(MD5.hexDigest(message) == "a24f1e3ef66950e1327f210e3997ba2c")
        #expect(SHA256.hexDigest(message) == "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d")
    }

    @Test("digest sizes and hex encoding")
    func digestShape() {
        #expect(MD5.hash("abc").count == MD5.digestCount)
        #expect(SHA256.hash("abc").count == SHA256.digestCount)
        #expect(MD5.digestCount == 16)
        #expect(SHA256.digestCount == 32)
        #expect([UInt8]([0x00, 0x0f, 0xa0, 0xff]).hexString == "000fa0ff")
        #expect([UInt8]().hexString == "")
    }
}
