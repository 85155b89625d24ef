import Testing
import SetteeCore
@testable import Settee

@Suite("Locating a key path's line in JSON text")
struct JSONKeyPathLocatorTests {
    private let text = """
        {
          "_id": "_design/app",
          "views": {
            "lib": {"note": "the text \\"by_name\\": {\\"map\\": is in a string"},
            "by_name": {
              "reduce": "_count",
              "map": "function (doc) { emit(doc.name, null); }"
            },
            "by_city": {"map": "function (doc) {}"}
          }
        }
        """

    @Test("Keys are found in order; text inside strings is not a key", arguments: [
        (["views"], 3), (["views", "by_name"], 5), (["views", "by_name", "map"], 7), (["views", "by_name", "reduce"], 6),
        (["views", "by_city", "map"], 9), (["_id"], 2),
    ])
    func found(path: [String], line: Int) {
        #expect(JSONKeyPathLocator.line(of: path, in: Array(text.utf8)) == line)
    }

    @Test("A missing key gives nil", arguments: [["views", "by_phone"], ["options"], []])
    func missing(path: [String]) {
        #expect(JSONKeyPathLocator.line(of: path, in: Array(text.utf8)) == nil)
    }
}
