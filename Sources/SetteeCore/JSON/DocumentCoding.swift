public import Foundation

/// How `Codable` values become documents and documents become values: the
/// `JSONEncoder` and `JSONDecoder` a database uses, set for a database with
/// `Database.Options.coding` and for one call with its `coding:` argument.
///
/// By default dates are ISO 8601 text in UTC with nine fractional digits
/// (`2026-11-25T14:17:12.491494700Z`), so a `Date` comes back as it was
/// written: bit for bit for dates more than about 100 days from 2001-01-01,
/// to the nanosecond for any other. Reading takes ISO 8601 with or without
/// fractional seconds (what `JSONEncoder`'s `.iso8601` writes) and with a
/// time-zone offset. Keys are always written sorted, so that equal values
/// give equal revisions.
///
/// Each call makes a fresh encoder and decoder, set up with Settee's defaults
/// and then by the closures given here, which change what should differ:
///
/// ```swift
/// options.coding = DocumentCoding(
///     encoder: { $0.keyEncodingStrategy = .convertToSnakeCase; $0.dateEncodingStrategy = .secondsSince1970 },
///     decoder: { $0.keyDecodingStrategy = .convertFromSnakeCase; $0.dateDecodingStrategy = .secondsSince1970 })
/// ```
public struct DocumentCoding: Sendable {
    private let configureEncoder: @Sendable (JSONEncoder) -> Void
    private let configureDecoder: @Sendable (JSONDecoder) -> Void

    /// Settee's defaults, changed by `encoder` and `decoder`.
    ///
    /// - Parameters:
    ///   - encoder: Changes a fresh encoder that has Settee's defaults
    ///     (ISO 8601 dates with fractional seconds); keys are sorted after it ran.
    ///   - decoder: Changes a fresh decoder that has Settee's defaults.
    public init(encoder: @escaping @Sendable (JSONEncoder) -> Void = { _ in },
                decoder: @escaping @Sendable (JSONDecoder) -> Void = { _ in }) {
        configureEncoder = encoder
        configureDecoder = decoder
    }

    /// Settee's defaults: ISO 8601 dates with nine fractional digits, sorted keys.
    public static let standard = DocumentCoding()

    /// A new encoder set up as this coding says.
    public func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISO8601Timestamp.string(from: date))
        }
        encoder.outputFormatting = [.withoutEscapingSlashes]
        configureEncoder(encoder)
        encoder.outputFormatting.insert(.sortedKeys)
        return encoder
    }

    /// A new decoder set up as this coding says.
    public func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ISO8601Timestamp.date(from: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected an ISO 8601 date, found \"\(text)\"")
            }
            return date
        }
        configureDecoder(decoder)
        return decoder
    }
}
