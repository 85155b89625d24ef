import SetteeCore
import SetteeViews

extension FindRequest {
    /// Refuses, as CouchDB refuses them, the integers a request asks for that
    /// its text writes with a fraction or an exponent (`2.0`, `2e0`):
    /// CouchDB's JSON decoder reads such a number as a float, and `$mod`
    /// (``refuseFractionalModArguments(jsonText:)``), `$size`
    /// (`mango_selector:norm_ops/1`), `limit`, `skip`
    /// (`mango_opts:is_non_neg_integer/1`) and `r`
    /// (`mango_opts:is_pos_integer/1`) take integers only. A parsed
    /// ``JSONValue`` holds `2.0` and `2` alike, so this reads the text.
    ///
    /// As CouchDB reads a request body, the last of an object's repeated
    /// members is the one checked.
    /// - Parameters:
    ///   - text: A `_find` or `_explain` request body (or UNNEST's), JSON.
    ///   - selectorKeys: The body's members that are selectors.
    /// - Throws: CouchDB's `bad_arg` for `$mod` or `$size`,
    ///   `invalid_non_neg_integer` for `limit` or `skip`,
    ///   `invalid_pos_integer` for `r`.
    package static func refuseIntegersWrittenAsFloats(jsonText text: [UInt8], selectorKeys: [String] = ["selector"]) throws(MangoError) {
        try refuseFractionalModArguments(jsonText: text)
        try refuseFloats(jsonText: text, selectorPaths: selectorKeys.map { [$0] }, nonNegative: ["limit", "skip"], positive: ["r"])
    }

    /// Throws for a `$size` written as a float in the selectors at
    /// `selectorPaths` (member names from the top), then for a member of the
    /// top object named in `nonNegative` (`invalid_non_neg_integer`) or
    /// `positive` (`invalid_pos_integer`) written as a float.
    static func refuseFloats(jsonText text: [UInt8], selectorPaths: [[String]], nonNegative: Set<String> = [],
                             positive: Set<String> = []) throws(MangoError) {
        // Most requests write no number with a fraction or an exponent: one pass over the bytes says so.
        guard writesAFloat(text), let body = try? JSONParser.parse(text),
              let forms = try? text.withUnsafeBytes({ try Condition.numberForms($0) }) else { return }
        for path in selectorPaths {
            var found: (value: JSONValue, form: JSONValue)? = (body, forms)
            for key in path {
                found = found.flatMap { found in lastOfEach(found.value, found.form).last { $0.key == key }.map { ($0.value, $0.form) } }
            }
            if let found { try refuseFloatSize(found.value, form: found.form) }
        }
        for (key, value, form) in lastOfEach(body, forms) where form == .bool(true) {
            guard case .number(let number, _) = value else { continue }
            let written = String(decoding: ErlangFormat.floatText(number), as: UTF8.self)
            if nonNegative.contains(key) {
                throw MangoError(error: "invalid_non_neg_integer", reason: "\(written) is not an integer greater than or equal to zero")
            }
            if positive.contains(key) {
                throw MangoError(error: "invalid_pos_integer", reason: "\(written) is not an integer greater than zero")
            }
        }
    }

    /// Throws `bad_arg` for a `$size` written as a float, looking through the
    /// selector as `mango_selector:norm_ops/1` does: through `$and`, `$or`,
    /// `$nor`, `$not`, `$elemMatch`, `$allMatch`, `$keyMapMatch` and field
    /// names, not into other operators' arguments (`{"$eq": {"$size": 2.0}}`
    /// compares with an object).
    private static func refuseFloatSize(_ selector: JSONValue, form: JSONValue) throws(MangoError) {
        for (key, value, form) in lastOfEach(selector, form) {
            switch key {
            case "$and", "$or", "$nor":
                guard case .array(let elements) = value, case .array(let forms) = form, forms.count == elements.count else { continue }
                for (element, elementForm) in zip(elements, forms) { try refuseFloatSize(element, form: elementForm) }
            case "$size":
                if case .number(let number, _) = value, form == .bool(true) {
                    throw MangoError(error: "bad_arg", reason: "Bad argument for operator $size: \(String(decoding: ErlangFormat.floatText(number), as: UTF8.self))")
                }
            case "$not", "$elemMatch", "$allMatch", "$keyMapMatch":
                try refuseFloatSize(value, form: form)
            default:
                if !key.hasPrefix("$") { try refuseFloatSize(value, form: form) }
            }
        }
    }

    /// An object's members with their forms, the last of repeated names
    /// only; none when `value` is not an object or `form` not its form.
    private static func lastOfEach(_ value: JSONValue, _ form: JSONValue) -> [(key: String, value: JSONValue, form: JSONValue)] {
        guard case .object(let members) = value, case .object(let forms) = form, forms.count == members.count else { return [] }
        var last: [String: Int] = [:]
        for (index, member) in members.enumerated() { last[member.key] = index }
        return members.indices.filter { last[members[$0].key] == $0 }.map { (members[$0].key, members[$0].value, forms[$0].value) }
    }

    /// Whether a number outside the strings of `text` is written with a
    /// fraction or an exponent.
    private static func writesAFloat(_ text: [UInt8]) -> Bool {
        var index = 0
        var inNumber = false
        while index < text.count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "\""):
                inNumber = false
                index += 1
                while index < text.count, text[index] != UInt8(ascii: "\"") {
                    index += text[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                inNumber = true
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"):
                if inNumber { return true }
            case UInt8(ascii: "+"):
                break
            default:
                inNumber = false
            }
            index += 1
        }
        return false
    }
}
