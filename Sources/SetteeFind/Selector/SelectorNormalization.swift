import Foundation
import SetteeCore

/// CouchDB's selector normalization (`mango_selector:normalize/1`), step by
/// step on the selector's JSON: operators checked and implicit ones made
/// explicit, field names pushed down to the conditions they apply to
/// (`{"a": {"b": {"$gt": 1}}}` becomes `{"a.b": {"$gt": 1}}`), negations
/// pushed down to the conditions (`{"$not": {"a": {"$gt": 1}}}` becomes
/// `{"a": {"$lte": 1}}`). The result is what `explain` shows as the selector.
enum SelectorNormalization {
    static func normalize(_ selector: JSONValue) throws(MangoError) -> JSONValue {
        if case .object(let members) = selector, members.isEmpty { return selector }
        let normalized = normalizeNegations(try normalizeFields(try normalizeOperators(selector)))
        guard case .object(let members) = normalized else { throw .badField(normalized) }
        if members.contains(where: { $0.key.isEmpty }) { throw .missingFieldName }
        return normalized
    }

    /// The single member of a one-member object.
    private static func single(_ value: JSONValue) -> (key: String, value: JSONValue)? {
        if case .object(let members) = value, members.count == 1 { return members[0] }
        return nil
    }

    private static func object(_ key: String, _ value: JSONValue) -> JSONValue {
        .object([(key: key, value: value)])
    }

    private static func isObject(_ value: JSONValue) -> Bool {
        if case .object = value { return true }
        return false
    }

    // MARK: norm_ops

    static func normalizeOperators(_ selector: JSONValue) throws(MangoError) -> JSONValue {
        if let (key, argument) = single(selector) {
            switch key {
            case "$and", "$or", "$nor":
                guard case .array(let elements) = argument else { throw .badArgument(key, argument) }
                var normalized: [JSONValue] = []
                for element in elements { normalized.append(try normalizeOperators(element)) }
                return object(key, .array(normalized))
            case "$not", "$elemMatch", "$allMatch", "$keyMapMatch":
                guard isObject(argument) else { throw .badArgument(key, argument) }
                return object(key, try normalizeOperators(argument))
            case "$in", "$nin", "$all":
                guard case .array = argument else { throw .badArgument(key, argument) }
                return selector
            case "$exists":
                guard case .bool = argument else { throw .badArgument(key, argument) }
                return selector
            case "$type":
                guard case .string = argument else { throw .badArgument(key, argument) }
                return selector
            case "$mod":
                guard case .array(let pair) = argument, pair.count == 2,
                      let divisor = integer(pair[0]), integer(pair[1]) != nil, divisor != 0
                else { throw .badArgument(key, argument) }
                return selector
            case "$regex":
                guard case .string(let pattern) = argument, (try? MangoRegex.compile(pattern)) != nil
                else { throw .badArgument(key, argument) }
                return selector
            case "$size":
                guard let size = integer(argument), size >= 0 else { throw .badArgument(key, argument) }
                return selector
            case "$beginsWith":
                // CouchDB has no clause for a non-string prefix: an unknown operator there.
                guard case .string = argument else { throw .invalidOperator(key) }
                return selector
            case "$text":
                // Text search needs a text index service, which Settee does not have.
                throw .notSupported(key)
            case "$lt", "$lte", "$eq", "$ne", "$gte", "$gt":
                return selector
            case "$where", "$geoWithin", "$geoIntersects", "$near", "$nearSphere":
                throw .notSupported(key)
            default:
                if key.hasPrefix("$") { throw .invalidOperator(key) }
                return object(key, try normalizeOperators(argument))
            }
        }
        if case .object(let members) = selector, members.count > 1 {
            var normalized: [JSONValue] = []
            for member in members { normalized.append(try normalizeOperators(.object([member]))) }
            return object("$and", .array(normalized))
        }
        // A bare value means equality; so does an empty object.
        return object("$eq", selector)
    }

    /// The integer a JSON number holds, when it holds one.
    static func integer(_ value: JSONValue) -> Int? {
        guard case .number(let number, _) = value, number.rounded() == number, abs(number) < 9.0e15 else { return nil }
        return Int(number)
    }

    // MARK: norm_fields

    static func normalizeFields(_ selector: JSONValue) throws(MangoError) -> JSONValue {
        if case .object(let members) = selector, members.isEmpty { return selector }
        return try normalizeFields(selector, path: "")
    }

    private static func normalizeFields(_ selector: JSONValue, path: String) throws(MangoError) -> JSONValue {
        guard let (key, argument) = single(selector) else {
            if case .object(let members) = selector, members.isEmpty { return object(path, selector) }
            throw .badField(selector)
        }
        switch key {
        case "$and", "$or", "$nor":
            guard case .array(let elements) = argument else { throw .badField(selector) }
            var normalized: [JSONValue] = []
            for element in elements { normalized.append(try normalizeFields(element, path: path)) }
            return object(key, .array(normalized))
        case "$not":
            return object(key, try normalizeFields(argument, path: path))
        case "$elemMatch", "$allMatch", "$keyMapMatch":
            return object(path, object(key, try normalizeFields(argument)))
        default:
            if key.hasPrefix("$") { return object(path, selector) }
            return try normalizeFields(argument, path: path.isEmpty ? key : path + "." + key)
        }
    }

    // MARK: norm_negations

    static func normalizeNegations(_ selector: JSONValue) -> JSONValue {
        guard let (key, argument) = single(selector) else { return selector }
        switch key {
        case "$not":
            return negate(argument)
        case "$nor":
            return object("$and", .array((argument.arrayValue ?? []).map(negate)))
        case "$and", "$or":
            return object(key, .array((argument.arrayValue ?? []).map(normalizeNegations)))
        case "$elemMatch", "$allMatch", "$keyMapMatch":
            return object(key, normalizeNegations(argument))
        default:
            return selector
        }
    }

    private static func negate(_ selector: JSONValue) -> JSONValue {
        guard let (key, argument) = single(selector) else { return selector }
        switch key {
        case "$not": return normalizeNegations(argument)
        case "$nor": return object("$or", .array((argument.arrayValue ?? []).map(normalizeNegations)))
        case "$and": return object("$or", .array((argument.arrayValue ?? []).map(negate)))
        case "$or": return object("$and", .array((argument.arrayValue ?? []).map(negate)))
        case "$lt": return object("$gte", argument)
        case "$lte": return object("$gt", argument)
        case "$eq": return object("$ne", argument)
        case "$ne": return object("$eq", argument)
        case "$gte": return object("$lt", argument)
        case "$gt": return object("$lte", argument)
        case "$in": return object("$nin", argument)
        case "$nin": return object("$in", argument)
        case "$exists": return object("$exists", .bool(!(argument.boolValue ?? false)))
        default:
            if key.hasPrefix("$") { return object("$not", selector) }
            return object(key, negate(argument))
        }
    }
}
