import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// `/{db}/_design/{ddoc}/_rewrite/{path}`: CouchDB 3.5's rewrites
/// (`chttpd_rewrite`). A design document's `rewrites` is either an array of
/// rules (`from`, `to`, `method`, `query`, `formats`) matched against the
/// path, or a JavaScript function of the request returning the new `path`
/// (with `method`, `query`, `headers`, `body`) or a response (`code`). The
/// request is then routed again from the server's root, relative to the
/// design document (`../../doc` is `/db/doc`).
extension CouchAPI {
    /// How many times this request was rewritten, and the path it was asked for.
    enum Rewriting {
        @TaskLocal static var count = 0
        @TaskLocal static var requestedPath: [String]?
    }

    func rewrite(_ design: DesignFunctionCall, rest: [String], _ request: inout CouchRequest) async throws -> Response {
        guard Rewriting.count < 100 else { throw CouchError.badRequest("Exceeded rewrite recursion limit") }
        let json = Self.documentJSON(design.document)
        let prefix = "/\(Self.escapePath(design.database))/_design/\(Self.escapePath(String(design.document.id.dropFirst(8))))"
        let target: (method: String?, path: String, headers: [(String, String)], body: [UInt8]?)
        switch json["rewrites"] {
        case .array(let rules)?:
            target = (nil, try Self.boundPath(rules, method: request.method.rawValue, parts: Array(rest.dropFirst()),
                                              query: request.parameters, prefix: prefix), [], nil)
        case .string?:
            let req = try await designRequestObject(&request, design, id: nil, rewrite: true,
                                                    requestedPath: Rewriting.requestedPath)
            let answers = try await design.call(["rewrites"], arguments: [req])
            switch answers.last {
            case .array(let parts)? where parts.first == "no_dispatch_rule":
                throw CouchError(.notFound, "rewrite_error", "Invalid path.")
            case .array(let parts)? where parts.count == 2 && parts[0] == "ok":
                guard case .object = parts[1] else { throw CouchError(.internalServerError, "rewrite_error", "bad rewrite") }
                if let response = try await Self.rewriteResponse(parts[1], &request) { return response }
                target = try Self.rewriteTarget(parts[1], request: request, prefix: prefix)
            case .object(let members)? where members.count == 1 && ["forbidden", "unauthorized"].contains(members[0].key):
                let forbidden = members[0].key == "forbidden"
                throw CouchError(forbidden ? .forbidden : .unauthorized, members[0].key, members[0].value.stringValue ?? members[0].value.jsonText)
            default:
                throw Self.badAnswer(answers, from: "rewrite")
            }
        default:
            throw CouchError(.notFound, "rewrite_error", "Invalid path.")
        }
        try Self.requireInside(design.database, target.path)
        // The request again, with its new path (and method, headers, body), from the root.
        var body: [UInt8]
        if let given = target.body { body = given } else { body = try await request.bodyBytes() }
        var head = request.request.head
        if let method = target.method { head.method = HTTPRequest.Method(method) ?? head.method }
        head.path = target.path
        for (name, value) in target.headers {
            if let field = HTTPField.Name(name) { head.headerFields[field] = value }
        }
        var rewritten = try CouchRequest(Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: body))),
                                         user: request.user, limits: request.limits, plusIsSpace: request.plusIsSpace)
        rewritten.authenticatedBy = request.authenticatedBy
        rewritten.peer = request.peer
        rewritten.connection = request.connection
        try Self.requireInside(design.database, rewritten)
        // Authorized again as the request it now is: a rewrite grants nothing its caller could not ask for.
        return try await Rewriting.$count.withValue(Rewriting.count + 1) {
            try await Rewriting.$requestedPath.withValue(Rewriting.requestedPath ?? request.segments) {
                try await dispatch(&rewritten)
            }
        }
    }

    static let insecureRewrite = CouchError(.internalServerError, "insecure_rewrite_rule", "too many ../.. segments")

    /// Refuses a rewritten path that leaves database `database`
    /// (CouchDB's `secure_rewrites`, on by default): once `..` and `%2E%2E`
    /// are resolved, its first segment must still be the database.
    static func requireInside(_ database: String, _ path: String) throws(CouchError) {
        let pathPart = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        guard normalizedPath(pathPart).split(separator: "/").first.map(String.init) == escapePath(database) else {
            throw insecureRewrite
        }
    }

    /// Refuses a rewritten request whose decoded segments leave `database`
    /// or climb out of it (a `..` of its own, once percent-decoded).
    static func requireInside(_ database: String, _ request: CouchRequest) throws(CouchError) {
        guard request.segments.first == database, !request.segments.contains(where: { $0 == ".." || $0 == "." }) else {
            throw insecureRewrite
        }
    }

    // MARK: The function form

    /// A rewrite answered with a `code`: the response itself.
    private static func rewriteResponse(_ rewrite: JSONValue, _ request: inout CouchRequest) async throws -> Response? {
        guard let code = rewrite["code"] else { return nil }
        guard let number = code.doubleValue, number == number.rounded(), number >= 200, number < 600 else {
            throw CouchError(.internalServerError, "rewrite_error", "bad code")
        }
        var fields = HTTPFields()
        if case .object(let headers)? = rewrite["headers"] {
            for (name, value) in headers {
                if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value.stringValue ?? value.jsonText)) }
            }
        }
        let body: [UInt8] = if let text = rewrite["body"]?.stringValue { Array(text.utf8) } else { try await request.bodyBytes() }
        fields[.contentLength] = String(body.count)
        return Response(status: HTTPResponse.Status(code: Int(number)), headers: fields,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// Where a rewrite function's answer sends the request (`chttpd_rewrite:rewrite_path`).
    private static func rewriteTarget(_ rewrite: JSONValue, request: CouchRequest,
                                      prefix: String) throws -> (method: String?, path: String, headers: [(String, String)], body: [UInt8]?) {
        func bad(_ what: String) -> CouchError { CouchError(.internalServerError, "rewrite_error", "bad \(what)") }
        if let method = rewrite["method"], method.stringValue == nil { throw bad("method") }
        if let body = rewrite["body"], body.stringValue == nil { throw bad("body") }
        guard let pathValue = rewrite["path"] else {
            throw CouchError(.internalServerError, "rewrite_error", "Rewrite result must produce a new path.")
        }
        guard let path = pathValue.stringValue else { throw bad("path") }
        var headers: [(String, String)] = []
        if let value = rewrite["headers"] {
            guard case .object(let members) = value else { throw bad("headers") }
            for (name, value) in members {
                guard let text = value.stringValue else {
                    throw CouchError(.internalServerError, "rewrite_error", "object key/value must be strings \(name)=\(value.jsonText)")
                }
                headers.append((name, text))
            }
        }
        var query = request.parameters
        if let value = rewrite["query"] {
            guard case .object(let members) = value else { throw bad("query") }
            query = try members.map { name, value throws(CouchError) in
                guard let text = value.stringValue else {
                    throw CouchError(.internalServerError, "rewrite_error", "object key/value must be strings \(name)=\(value.jsonText)")
                }
                return (name, text)
            }
        }
        var target = normalizedPath(prefix + "/" + path)
        let queryText = query.map { quote($0.name) + "=" + quote($0.value) }.joined(separator: "&")
        if !queryText.isEmpty { target += "?" + queryText }
        return (rewrite["method"]?.stringValue, target, headers, rewrite["body"]?.stringValue.map { Array($0.utf8) })
    }

    // MARK: The array form

    /// The path the first matching rule gives (`chttpd_rewrite:try_bind_path`),
    /// its bindings (path variables, then the request's query, then the
    /// rule's `query`) as the query string.
    /// - Throws: 404 `not_found` `missing` when no rule matches.
    static func boundPath(_ rules: [JSONValue], method: String, parts: [String],
                          query: [(name: String, value: String)], prefix: String) throws -> String {
        let jsonKeys: Set<String> = ["key", "startkey", "start_key", "endkey", "end_key", "keys"]
        let queryBindings: [(String, JSONValue)] = query.map { name, value in
            if jsonKeys.contains(name), let json = try? JSONValue(parsing: value) { return (name, json) }
            return (name, .string(value))
        }
        for rule in rules {
            guard case .object = rule else { continue }
            let ruleMethod = rule["method"]?.stringValue ?? "*"
            guard ruleMethod == "*" || ruleMethod == method else { continue }
            let from = try pathTokens(rule["from"]?.stringValue ?? "*")
            guard let toText = rule["to"]?.stringValue else {
                throw CouchError(.internalServerError, "error", "invalid_rewrite_target")
            }
            let to = try pathTokens(toText)
            guard let (remaining, pathBindings) = bind(from, parts) else { continue }
            var bindings: [(String, JSONValue)] = pathBindings.reversed().map { ($0.0, .string($0.1)) } + queryBindings
            let formats = rule["formats"]?.objectValue ?? []
            var ruleQuery: [(String, JSONValue)] = []
            for (key, value) in rule["query"]?.objectValue ?? [] {
                ruleQuery.insert((key, replacingVariables(value, bindings, formats)), at: 0)
            }
            bindings = bindings.filter { binding in !ruleQuery.contains { $0.0 == binding.0 } } + ruleQuery
            var newParts: [String] = []
            for token in to {
                if token == "*" { newParts += remaining; break }
                if token.hasPrefix(":") {
                    let value = bindings.first { $0.0 == String(token.dropFirst()) }?.1
                    newParts.append(value.map { $0.stringValue ?? $0.jsonText } ?? "undefined")
                } else {
                    newParts.append(token)
                }
            }
            var path = newParts.map(quotePlus).joined(separator: "/")
            let encoded: [(String, String)] = bindings.reversed().compactMap { key, value in
                if key == "*" { return nil }
                let text = jsonKeys.contains(key) ? value.jsonText : (value.stringValue ?? value.jsonText)
                return (key, text)
            }
            if !encoded.isEmpty { path += "?" + encoded.map { quotePlus($0.0) + "=" + quotePlus($0.1) }.joined(separator: "&") }
            let (pathPart, queryPart) = path.firstIndex(of: "?").map { (String(path[..<$0]), String(path[$0...])) } ?? (path, "")
            return normalizedPath(prefix + "/" + pathPart) + queryPart
        }
        throw CouchError.missing
    }

    /// A rule's `from` or `to` split on `/` (empty parts dropped); `:name`
    /// stays as it is written. More than two `..` is refused, as `secure_rewrites` does.
    static func pathTokens(_ path: String) throws(CouchError) -> [String] {
        var tokens: [String] = []
        var upward = 0
        for part in path.split(separator: "/", omittingEmptySubsequences: true).map(String.init) {
            if part == ".." {
                upward += 1
                if upward > 2 { throw insecureRewrite }
            }
            tokens.append(part)
        }
        return tokens
    }

    /// Matches `parts` against a rule's tokens: the parts `*` takes and the path variables bound.
    static func bind(_ tokens: [String], _ parts: [String]) -> (remaining: [String], bindings: [(String, String)])? {
        var bindings: [(String, String)] = []
        var index = 0
        for (position, token) in tokens.enumerated() {
            if token == "*" && position == tokens.count - 1 { return (Array(parts[index...]), bindings) }
            guard index < parts.count else { return nil }
            if token.hasPrefix(":") {
                bindings.append((String(token.dropFirst()), parts[index]))
            } else if token != parts[index] {
                return nil
            }
            index += 1
        }
        return index == parts.count ? ([], bindings) : nil
    }

    /// A rule's `query` value with `:name` (and `*`) replaced by its binding,
    /// formatted as `formats` says (`int`, `bool`).
    static func replacingVariables(_ value: JSONValue, _ bindings: [(String, JSONValue)], _ formats: [(key: String, value: JSONValue)]) -> JSONValue {
        func variable(_ text: String) -> JSONValue {
            let name = text == "*" ? "*" : String(text.dropFirst())
            var found = bindings.first { $0.0 == name }?.1 ?? .string(text)
            switch (formats.first { $0.key == name }?.value.stringValue, found.stringValue) {
            case ("int", let text?): if let number = Int(text) { found = .number(Double(number)) }
            case ("bool", let text?):
                if text.lowercased() == "true" { found = true } else if text.lowercased() == "false" { found = false }
            default: break
            }
            return found
        }
        switch value {
        case .string(let text) where text == "*" || text.hasPrefix(":"):
            return variable(text)
        case .array(let items):
            return .array(items.map { item in
                if case .string(let text) = item, text.hasPrefix(":") { return variable(text) }
                return item
            })
        default:
            return value
        }
    }

    /// `.` and `..` resolved, empty segments dropped (`chttpd_rewrite:normalize_path`).
    static func normalizedPath(_ path: String) -> String {
        var segments: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..":
                if let last = segments.last, last != ".." { segments.removeLast() } else { segments.append(segment) }
            default: segments.append(segment)
            }
        }
        return "/" + segments.joined(separator: "/")
    }

    /// mochiweb's `quote_plus`: all but letters, digits and `-_.~` percent-encoded, a space as `+`.
    static func quotePlus(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: " "):
                out.append("+")
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// `chttpd:quote`: percent-encoding (a space as `%20`).
    static func quote(_ text: String) -> String {
        quotePlus(text).replacingOccurrences(of: "+", with: "%20")
    }
}
