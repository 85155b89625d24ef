import Foundation
@testable import SetteeServer
import Testing

@Suite("Percent-decoding of paths and query strings")
struct PercentDecodingTests {
    @Test("Decodes as Foundation's removingPercentEncoding does, on random text of escapes, bad escapes and UTF-8")
    func matchesFoundation() {
        let pieces = ["a", "Z", "0", "/", "+", " ", "%", "%2", "%2F", "%2f", "%zz", "%41", "%C3%A9", "%C3", "%E2%82%AC", "%FF", "é", "€", "_design", "%25", "%%"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            #expect(PercentDecoding.decode(text[...]) == text.removingPercentEncoding, "\(text)")
            let spaced = text.replacingOccurrences(of: "+", with: " ")
            #expect(PercentDecoding.decode(text[...], plusIsSpace: true) == spaced.removingPercentEncoding, "\(text)")
        }
    }

    @Test("Query parameters: + is a space, a bad escape is kept as sent")
    func queryParameters() {
        let parameters = CouchRequest.parseQuery("key=%22a+b%22&x=%zz+1;startkey=%5B1%5D&flag")
        #expect(parameters.map(\.name) == ["key", "x", "startkey", "flag"])
        #expect(parameters.map(\.value) == ["\"a b\"", "%zz 1", "[1]", ""])
    }
}
