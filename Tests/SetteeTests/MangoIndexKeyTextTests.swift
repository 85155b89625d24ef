import Foundation
import Testing
import Settee

@Suite("A JSON index's keys are written as JSONWriter writes the indexed values, whatever their text in the document, numbers as the document wrote them")
struct MangoIndexKeyTextTests {
    @Test("Strings with escapes or beyond ASCII, numbers written otherwise, literals, arrays and objects with spaces")
    func keysAreCanonical() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let values = [#""plain""#, #""caf\u00e9""#, "\"caf\u{E9}\"", #""tab\t""#, #""a\/b""#, #""q\"""#, #""""#, "\"\u{7F}\"",
                      "1.0", "1e2", "-0", "0", "-12", "123456789012345", "1234567890123456", "12.5", "true", "false",
                      "null", "9007199254740993", "[1, 2.0, \"x\"]", #"{"a" : 1, "b":[ ]}"#]
        for (number, value) in values.enumerated() {
            try db.put(#"{"_id": "d\#(number < 10 ? "0" : "")\#(number)", "v":  \#(value) , "w": \#(number)}"#)
        }
        try db.put(#"{"_id": "missing", "w": 1}"#)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["v", "w"]}, "ddoc": "keys", "name": "vw"}"#))
        let rows = try db.query(designDocument: "keys", view: "vw", options: ViewQueryOptions(reduce: false)).rows
        #expect(rows.count == values.count, "one row per document with both fields")
        for row in rows {
            let number = Int(row.id!.dropFirst())!
            // Numbers whose double would be written otherwise (`1.0`, `1e2`) keep their text, as the document does.
            let expected = JSONValue.array([try JSONValue(parsing: values[number]), .number(Double(number))]).exactJSONText
            #expect(row.keyJSON == expected, "\(values[number])")
            #expect(row.valueJSON == "null")
        }
        #expect(try db.find(FindRequest(selector: ["v": "café"])).found.count == 2)
        #expect(try db.find(FindRequest(selector: ["v": 100])).found.count == 1)
    }
}
