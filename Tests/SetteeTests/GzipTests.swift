import Testing
import SetteeCore

@Suite("gzip through zlib")
struct GzipTests {
    @Test("What compress makes, decompress gives back, at every level")
    func roundTrip() throws {
        let text = Array(String(repeating: "Settee keeps every byte. ", count: 1_000).utf8)
        for level in [0, 1, 6, 8, 9] {
            let compressed = Gzip.compress(text, level: level)
            #expect(compressed.prefix(2) == [0x1F, 0x8B])
            #expect(try Gzip.decompress(compressed) == text)
        }
        #expect(try Gzip.decompress(Gzip.compress([UInt8]())) == [])
    }

    @Test("Concatenated members inflate one after another, as gunzip does")
    func members() throws {
        let both = Gzip.compress(Array("one ".utf8)) + Gzip.compress(Array("two".utf8))
        #expect(try Gzip.decompress(both) == Array("one two".utf8))
    }

    @Test("Bytes that are not gzip, cut short, or inflate past the limit are refused")
    func refusals() {
        let compressed = Gzip.compress([UInt8](repeating: 7, count: 1_000_000))
        #expect(throws: Gzip.Failure.notGzip) { try Gzip.decompress(Array("plain".utf8)) }
        #expect(throws: Gzip.Failure.notGzip) { try Gzip.decompress([UInt8]()) }
        #expect(throws: Gzip.Failure.notGzip) { try Gzip.decompress(compressed.dropLast(20)) }
        #expect(throws: Gzip.Failure.tooLarge) { try Gzip.decompress(compressed, limit: 999_999) }
        #expect((try? Gzip.decompress(compressed, limit: 1_000_000))?.count == 1_000_000)
    }
}
