package import Foundation

/// Dates as ISO 8601 text in UTC with nine fractional digits, e.g.
/// `2026-11-25T14:17:12.491494700Z`: every `Date` that is more than about
/// 100 days from 2001-01-01 comes back bit for bit, any other to the
/// nanosecond; the fixed width keeps the text in time order when compared
/// byte by byte (as view keys often are). Reading also takes ISO 8601 without
/// fractional seconds or with any number of digits, and with a `±HH:MM`
/// offset, as `JSONEncoder`'s `.iso8601` and other programs write it.
package enum ISO8601Timestamp {
    /// Seconds from 1970-01-01 to 2001-01-01, Foundation's reference date.
    private static let referenceDateOffset: Int64 = 978_307_200

    /// The text for `date`.
    package static func string(from date: Date) -> String {
        let interval = date.timeIntervalSinceReferenceDate
        var whole = interval.rounded(.down)
        var nanoseconds = fractionInNanoseconds(of: interval, whole: whole)
        if nanoseconds == 1_000_000_000 {
            whole += 1
            nanoseconds = 0
        }
        let seconds = Int64(whole) + referenceDateOffset
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilDate(daysSince1970: days)
        var text = year < 0 ? "-" : ""
        text += pad(abs(year), 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
        text += pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay % 3600 / 60, 2) + ":" + pad(secondOfDay % 60, 2)
        text += "." + pad(nanoseconds, 9) + "Z"
        return text
    }

    /// The fraction of a second of `interval` (whose whole seconds are
    /// `whole`) in nanoseconds, from the fewest decimal digits that read back
    /// as the same `Double` (`.4914947`, not `.491494656`), or from nine.
    private static func fractionInNanoseconds(of interval: Double, whole: Double) -> Int64 {
        let fraction = interval - whole
        var scale: Int64 = 100_000_000
        for digits in 1...8 {
            let units = (fraction * pow(10, Double(digits))).rounded()
            if whole + units / pow(10, Double(digits)) == interval { return Int64(units) * scale }
            scale /= 10
        }
        return Int64((fraction * 1e9).rounded())
    }

    /// The date `text` names, or nil when it is not ISO 8601 date and time text.
    package static func date(from text: String) -> Date? {
        var reader = Reader(bytes: Array(text.utf8))
        let negative = reader.take("-")
        guard let year = reader.number(digits: 4), reader.take("-"), let month = reader.number(digits: 2), reader.take("-"),
              let day = reader.number(digits: 2), reader.take("T") || reader.take("t") || reader.take(" "),
              let hour = reader.number(digits: 2), reader.take(":"), let minute = reader.number(digits: 2), reader.take(":"),
              let second = reader.number(digits: 2),
              (1...12).contains(month), (1...daysIn(month: month, year: negative ? -year : year)).contains(day),
              hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if reader.take(".") || reader.take(",") {
            let digits = reader.digits()
            guard !digits.isEmpty else { return nil }
            // Fifteen digits are exact in a Double, and finer than a Date holds.
            let kept = digits.prefix(15)
            fraction = Double(kept.reduce(Int64(0)) { $0 * 10 + Int64($1) }) / pow(10, Double(kept.count))
        }
        var offset: Int64 = 0
        if reader.take("Z") || reader.take("z") {
        } else if let sign = reader.take("+") ? Int64(1) : reader.take("-") ? -1 : nil {
            guard let hours = reader.number(digits: 2) else { return nil }
            _ = reader.take(":")
            guard let minutes = reader.number(digits: 2), hours < 24, minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard reader.atEnd else { return nil }
        let days = daysSince1970(year: negative ? -year : year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset - referenceDateOffset
        return Date(timeIntervalSinceReferenceDate: Double(seconds) + fraction)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private static func isLeap(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of the proleptic Gregorian calendar `days` after 1970-01-01 (`civil_from_days`).
    private static func civilDate(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = shifted.floorDivided(by: 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Reads the text of a timestamp from the front.
    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        var atEnd: Bool { position == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
            position += 1
            return true
        }

        mutating func number(digits count: Int) -> Int64? {
            guard position + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[position..<position + count] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            position += count
            return value
        }

        mutating func digits() -> [UInt8] {
            var digits: [UInt8] = []
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                digits.append(bytes[position] - UInt8(ascii: "0"))
                position += 1
            }
            return digits
        }
    }
}

private extension Int64 {
    /// The quotient rounded towards minus infinity.
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
