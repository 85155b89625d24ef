/// CouchDB's `reduce_limit`: a reduce whose output does not shrink fast enough
/// is an error (or, in `log` mode, only logged). The query server's is set by
/// the `reset` command's configuration (`reduce_limit`,
/// `reduce_limit_threshold`, `reduce_limit_ratio`); views use CouchDB's
/// defaults (``couchDBDefault``).
struct ReduceLimit: Equatable {
    enum Mode: Equatable {
        case off
        case error
        case log
    }

    var mode: Mode = .off
    /// Output shorter than this many characters always passes.
    var threshold: Double?
    /// Output longer than the input divided by this fails.
    var ratio: Double?

    init() {}

    /// CouchDB's defaults: an error past 5,000 characters of output that is
    /// more than half the input.
    static let couchDBDefault: ReduceLimit = {
        var limit = ReduceLimit()
        limit.mode = .error
        limit.threshold = 5000
        limit.ratio = 2
        return limit
    }()

    /// `_sum`'s own check (`check_sum_overflow/3` in couch_query_servers.erl),
    /// on sizes measured as Erlang terms (``ErlangExternalSize``): a sum of
    /// more than 4,906 bytes that is more than half its input becomes an error.
    static let builtinSum: ReduceLimit = {
        var limit = ReduceLimit()
        limit.mode = .error
        limit.threshold = 4906
        limit.ratio = 2
        return limit
    }()

    /// The message of a reduction that does not shrink fast enough, CouchDB's words.
    static func overflowMessage(inputSize: Int, outputSize: Int) -> String {
        "Reduce output must shrink more rapidly: input size: \(inputSize) output size: \(outputSize)"
    }

    /// Reads the `reset` configuration object; a missing or partial one turns
    /// the check off, as in CouchDB (comparisons with `undefined` are false).
    init(configuration: JSONValue?) {
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
    func isExceeded(inputLength: Int, outputLength: Int) -> Bool {
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
    var isTruthy: Bool {
        switch self {
        case .null: false
        case .bool(let value): value
        case .number(let value): value != 0 && !value.isNaN
        case .string(let value): !value.isEmpty
        case .array, .object: true
        }
    }
}
