import SetteeCore

/// The types CouchDB requires of a design document's members, whatever its
/// language (`couch_mrview:validate_ddoc_fields/1`): `views` an object of
/// objects, each with a `map` (an object in a `"language": "query"` design
/// document, where it defines a Mango index; a function's source, a string,
/// in any other), `reduce` a string, `shows`, `lists`, `updates` and
/// `filters` objects of strings or objects, and so on.
enum DesignDocumentFieldTypes {
    /// A JSON type a member may have, as CouchDB names it in its message.
    enum Kind: String {
        case object, string, array, boolean

        func admits(_ value: JSONValue) -> Bool {
            switch (self, value) {
            case (.object, .object), (.string, .string), (.array, .array), (.boolean, .bool): true
            default: false
            }
        }
    }

    /// A step of a path: a member's name, or every member of an object.
    private enum Step {
        case member(String)
        case any
    }

    /// Checks `document` (its JSON body) as CouchDB checks it.
    /// - Throws: ``DesignDocumentError`` with CouchDB's reason, e.g.
    ///   ``"`views.by_age.map` field must have object type"``, or
    ///   ``"View `by_age` must contain map function"``.
    static func check(_ document: JSONValue) throws(DesignDocumentError) {
        let mapKind: Kind = document["language"]?.stringValue == "query" ? .object : .string
        let paths: [[(Step, [Kind])]] = [
            [(.member("filters"), [.object]), (.any, [.object, .string])],
            [(.member("language"), [.string])],
            [(.member("lists"), [.object]), (.any, [.object, .string])],
            [(.member("options"), [.object])],
            [(.member("options"), [.object]), (.member("include_design"), [.boolean])],
            [(.member("options"), [.object]), (.member("local_seq"), [.boolean])],
            [(.member("options"), [.object]), (.member("partitioned"), [.boolean])],
            [(.member("rewrites"), [.string, .array])],
            [(.member("shows"), [.object]), (.any, [.object, .string])],
            [(.member("updates"), [.object]), (.any, [.object, .string])],
            [(.member("validate_doc_update"), [.string])],
            [(.member("views"), [.object]), (.member("lib"), [.object])],
            [(.member("views"), [.object]), (.any, [.object]), (.member("map"), [mapKind])],
            [(.member("views"), [.object]), (.any, [.object]), (.member("reduce"), [.string])],
        ]
        for path in paths { try check(document, path[...], at: []) }
        // require_map_function_for_views/1
        if case .object(let views)? = document["views"] {
            for (name, view) in views where name != "lib" && view["map"] == nil {
                throw DesignDocumentError(reason: "View `\(name)` must contain map function")
            }
        }
    }

    private static func check(_ value: JSONValue, _ path: ArraySlice<(Step, [Kind])>, at place: [String]) throws(DesignDocumentError) {
        guard let (step, kinds) = path.first else { return }
        guard case .object(let members) = value else { return }
        let names: [String]
        switch step {
        case .member(let name): names = [name]
        case .any: names = members.map(\.key)
        }
        for name in names {
            // A member that is not there is not checked.
            guard let member = members.last(where: { $0.key == name })?.value else { continue }
            guard kinds.contains(where: { $0.admits(member) }) else {
                let types = kinds.map(\.rawValue).joined(separator: " or ")
                throw DesignDocumentError(reason: "`\((place + [name]).joined(separator: "."))` field must have \(types) type")
            }
            try check(member, path.dropFirst(), at: place + [name])
        }
    }
}
