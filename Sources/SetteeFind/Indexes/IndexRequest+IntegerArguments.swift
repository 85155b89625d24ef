import SetteeCore

extension IndexRequest {
    /// Refuses, as CouchDB refuses them, the integers an index request asks
    /// for that its text writes with a fraction or an exponent (`2.0`):
    /// CouchDB's JSON decoder reads such a number as a float. `w` takes a
    /// positive integer (`mango_opts:is_pos_integer/1`), and the
    /// `partial_filter_selector` is checked as a `find` selector is
    /// (`mango_opts:validate_selector/1`): `$mod` and `$size` take integers.
    /// A parsed ``JSONValue`` holds `2.0` and `2` alike, so this reads the text.
    /// - Parameter text: A `POST /db/_index` request body, JSON.
    /// - Throws: CouchDB's `invalid_pos_integer` for `w`, `bad_arg` for
    ///   `$mod` or `$size`.
    package static func refuseIntegersWrittenAsFloats(jsonText text: [UInt8]) throws(MangoError) {
        try FindRequest.refuseFloats(jsonText: text, selectorPaths: [], positive: ["w"])
        try FindRequest.refuseFractionalModArguments(jsonText: text)
        try FindRequest.refuseFloats(jsonText: text, selectorPaths: [["index", "partial_filter_selector"]])
    }
}
