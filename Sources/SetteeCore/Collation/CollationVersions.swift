import CSetteeCollation

/// The versions of the ICU collation view keys are ordered by, as CouchDB
/// reports them (`GET /_node/_local/_versions`, `collator_versions` in a
/// design document's `_info`): an index's unicode-mode keys hold sort keys
/// of this collator version.
package struct CollationVersions: Sendable {
    /// ICU's library version (`72.1`).
    package let library: String
    /// The root collator's version (`153.120`).
    package let collator: String
    /// The Unicode Collation Algorithm's version (`15`).
    package let algorithm: String

    /// The versions of the ICU this process uses.
    package static let current: CollationVersions = {
        var library = [UInt8](repeating: 0, count: 4), collator = library, algorithm = library
        settee_collation_versions(&library, &collator, &algorithm)
        return CollationVersions(library: text(library), collator: text(collator), algorithm: text(algorithm))
    }()

    private init(library: String, collator: String, algorithm: String) {
        (self.library, self.collator, self.algorithm) = (library, collator, algorithm)
    }

    /// `72.1.0.0` as `72.1`: the components up to the last that is not zero (at least one).
    private static func text(_ parts: [UInt8]) -> String {
        let count = max(1, (parts.lastIndex { $0 != 0 } ?? 0) + 1)
        return parts.prefix(count).map(String.init).joined(separator: ".")
    }
}
