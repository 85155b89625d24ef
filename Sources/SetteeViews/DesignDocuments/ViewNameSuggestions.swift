package import SetteeStorage

/// The names nearest to a misspelt one, for the `missing_named_view` error.
package enum ViewNameSuggestions {
    /// Up to `count` of `names`, nearest to `name` first: by edit distance
    /// (insertions, deletions, substitutions; letter case ignored), then by name.
    package static func nearest(to name: String, in names: [String], count: Int = 3) -> [String] {
        let target = Array(name.lowercased().unicodeScalars)
        return names
            .map { (name: $0, distance: editDistance(target, Array($0.lowercased().unicodeScalars))) }
            .sorted { ($0.distance, $0.name) < ($1.distance, $1.name) }
            .prefix(count)
            .map(\.name)
    }

    /// Levenshtein distance, one row at a time.
    package static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

extension DocumentError {
    /// CouchDB's `{not_found, missing_named_view}`, naming the view and the
    /// design document's views nearest to it.
    package static func missingNamedView(_ view: String, in design: DesignDocument) -> DocumentError {
        var error = DocumentError(.notFound, "missing_named_view", id: design.id)
        error.view = view
        error.suggestions = ViewNameSuggestions.nearest(to: view, in: design.views.map(\.name))
        return error
    }
}
