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

    /// CouchDB 3.5's rule (share/server/views.js `runReduce`): an error past
    /// 4,096 characters of output that is more than half the input.
    package static let couchDBDefault: ReduceLimit = {
        var limit = ReduceLimit()
        limit.mode = .error
        limit.threshold = couchDB35Threshold
        limit.ratio = couchDB35Ratio
        return limit
    }()

    /// CouchDB 3.5's fixed threshold and ratio; later versions take them from
    /// the `reset` configuration (`reduce_limit_threshold`, `reduce_limit_ratio`).
    package static let couchDB35Threshold: Double = 4096
    package static let couchDB35Ratio: Double = 2

    /// Whether the configuration came from a CouchDB that sets the threshold
    /// and ratio (after 3.5), whose message also names the reduce's context.
    package private(set) var isConfigured = false

    /// `_sum`'s own check (`check_sum_overflow/3` in couch_query_servers.erl),
    /// on sizes measured as Erlang terms (``ErlangExternalSize``): a sum of
    /// more than 4,906 bytes that is more than half its input becomes an error.
    package static let builtinSum: ReduceLimit = {
        var limit = ReduceLimit()
        limit.mode = .error
        limit.threshold = 4906
        limit.ratio = 2
        return limit
    }()

    /// The message of a reduction that does not shrink fast enough, CouchDB's words.
    package static func overflowMessage(inputSize: Int, outputSize: Int) -> String {
        "Reduce output must shrink more rapidly: input size: \(inputSize) output size: \(outputSize)"
    }

    /// Reads the `reset` configuration object. CouchDB 3.5 sends only
    /// `reduce_limit` (`{"reduce_limit": true, "timeout": 5000}`): its fixed
    /// threshold and ratio apply. A later CouchDB also sends
    /// `reduce_limit_threshold` and `reduce_limit_ratio`; when only one of
    /// them is given the check is off, as there (comparisons with `undefined`
    /// are false). No `reduce_limit` turns the check off.
    package init(configuration: JSONValue?) {
        guard let configuration, let setting = configuration["reduce_limit"] else { return }
        if setting == .string("log") {
            mode = .log
        } else if setting.isTruthy {
            mode = .error
        }
        let threshold = configuration["reduce_limit_threshold"]
        let ratio = configuration["reduce_limit_ratio"]
        if threshold == nil && ratio == nil {
            self.threshold = Self.couchDB35Threshold
            self.ratio = Self.couchDB35Ratio
        } else {
            isConfigured = true
            self.threshold = threshold.flatMap(Self.number)
            self.ratio = ratio.flatMap(Self.number)
        }
    }

    /// Whether `outputLength` characters of reductions are too many for
    /// `inputLength` characters of input.
    package func isExceeded(inputLength: Int, outputLength: Int) -> Bool {
        guard mode != .off, let threshold, let ratio else { return false }
        return Double(outputLength) > threshold && Double(outputLength) * ratio > Double(inputLength)
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .number(let number, _): number
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
        case .number(let value, _): value != 0 && !value.isNaN
        case .string(let value): !value.isEmpty
        case .array, .object: true
        }
    }
}
