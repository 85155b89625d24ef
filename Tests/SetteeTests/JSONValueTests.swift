import Testing
@testable import Settee

@Suite("JSONValue")
struct JSONValueTests {
    @Test("literals build the matching cases, objects in literal order")
    func literals() {
        let value: JSONValue = ["a", 1, 2.5, nil, true, ["k": false, "b": []]]
        #expect(value == .array([
            .string("a"), .number(1), .number(2.5), .null, .bool(true),
            .object([(key: "k", value: .bool(false)), (key: "b", value: .array([]))]),
        ]))
    }

    @Test("equality is structural and order-sensitive for members")
    func equality() {
        let ab: JSONValue = ["a": 1, "b": 2]
        #expect(ab == ["a": 1, "b": 2])
        #expect(ab != ["b": 2, "a": 1])
        #expect(ab != ["a": 1])
        #expect(ab != ["a": 1, "c": 2])
        #expect(JSONValue.array([1, 2]) != [2, 1])
        #expect(JSONValue.number(0) == .number(-0.0))
        #expect(JSONValue.number(.nan) != .number(.nan))
        #expect(JSONValue.null != false)
        #expect(JSONValue.number(1) != "1")
    }

    @Test("accessors return values of the matching case only")
    func accessors() {
        let value: JSONValue = ["s": "text", "n": 4, "b": true, "a": [1], "o": ["x": nil], "s": "second"]
        #expect(value["s"]?.stringValue == "text")
        #expect(value["n"]?.doubleValue == 4)
        #expect(value["b"]?.boolValue == true)
        #expect(value["a"]?.arrayValue == [1])
        #expect(value["o"]?.objectValue?.first?.key == "x")
        #expect(value["o"]?["x"]?.isNull == true)
        #expect(value["missing"] == nil)
        #expect(value["a"]?[0] == 1)
        #expect(value["a"]?[1] == nil)
        #expect(value["s"]?.doubleValue == nil)
        #expect(value["n"]?.stringValue == nil)
        #expect(JSONValue.string("x")["s"] == nil)
        #expect(JSONValue.null.isNull)
        #expect(!JSONValue.bool(false).isNull)
    }

    @Test("description is the compact JSON text")
    func description() throws {
        let value: JSONValue = ["a": [1, "two", nil]]
        #expect(value.description == #"{"a":[1,"two",null]}"#)
        #expect("\(value)" == #"{"a":[1,"two",null]}"#)
        #expect(try JSONValue(parsing: value.jsonText) == value)
    }
}
