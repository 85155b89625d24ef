/// CouchDB's `reduce_limit`: a reduce whose output does not shrink fast enough
/// is an error (or, in `log` mode, only logged). The query server's is set by
/// the `reset` command's configuration (`reduce_limit`,
/// `reduce_limit_threshold`, `reduce_limit_ratio`); views use CouchDB's
/// defaults (``couchDBDefault``).
package struct ReduceLimit: Equatable {
    package enum Mode: Equatable {
        case off
        case error
        case log
    }

    package var mode: Mode = .off
    /// Output shorter than this many characters always passes.
    package var threshold: Double?
    /// Output longer than the input divided by this fails.
    package var ratio: Double?

    package init() {}

    /// CouchDB's defaults: an error past 5,000 characters of output that is
    /// more than half the input.
    package static let couchDBDefault: ReduceLimit = {
        var limit = ReduceLimit()
        limit.mode = .error
        limit.threshold = 5000
        limit.ratio = 2
        return limit
    }()

    /// Reads the `reset` configuration object; a missing or partial one turns
    /// the check off, as in CouchDB (comparisons with `undefined` are false).
    package init(configuration: JSONValue?) {
        guard let configuration, let setting = configuration["reduce_limit"] else { return }
        if setting == .string("log") {
            mode = .log
        } else if setting.isTruthy {
            mode = .error
        }
        threshold = configuration["reduce_limit_threshold"].flatMap(Self.number)
        ratio = configuration["reduce_limit_ratio"].flatMap(Self.number)
    }

    /// Whether `outputLength` characters of reductions are too many for
    /// `inputLength` characters of input.
    package func isExceeded(inputLength: Int, outputLength: Int) -> Bool {
        guard mode != .off, let threshold, let ratio else { return false }
        return Double(outputLength) > threshold && Double(outputLength) * ratio > Double(inputLength)
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .number(let number): number
        case .string(let text): Double(text)
        default: nil
        }
    }
}

extension JSONValue {
    /// JavaScript's truthiness of the value.
    package var isTruthy: Bool {
        switch self {
        case .null: false
        case .bool(let value): value
        case .number(let value): value != 0 && !value.isNaN
        case .string(let value): !value.isEmpty
        case .array, .object: true
        }
    }
}
