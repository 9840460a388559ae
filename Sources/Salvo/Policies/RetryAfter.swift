import Foundation

/// `Retry-After` (RFC 9110 §10.2.3): a number of seconds, or an HTTP-date.
enum RetryAfter {
    /// How long the server asks to wait, from `now`; nil when the field is missing or not a
    /// valid value (then the policy's own backoff applies). A date in the past is zero.
    static func delay(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Capped so that the number always fits (a cap far past any retry's).
            let digits = value.drop { $0 == "0" }
            guard digits.count <= 9 else { return .seconds(999_999_999) }
            return .seconds(Int(digits) ?? 0)
        }
        guard let date = self.httpDate(value) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return seconds <= 0 ? .zero : .milliseconds(Int64(Swift.min(seconds, 999_999_999) * 1000))
    }

    /// The three forms RFC 9110 §5.6.7 has recipients accept: IMF-fixdate
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and
    /// asctime (`Sun Nov  6 08:49:37 1994`).
    static func httpDate(_ text: String) -> Date? {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: String?
        if words.count == 6, words[5] == "GMT", words[0].hasSuffix(",") {
            (day, month, year, time) = (Int(words[1]), self.month(words[2]), Int(words[3]), words[4])
        } else if words.count == 4, words[3] == "GMT", words[0].hasSuffix(",") {
            let parts = words[1].split(separator: "-").map(String.init)
            guard parts.count == 3, let short = Int(parts[2]) else { return nil }
            // Two-digit years: the RFC's rule — more than 50 years ahead means the past century.
            let current = Calendar(identifier: .gregorian).component(.year, from: Date())
            var full = parts[2].count == 4 ? short : current / 100 * 100 + short
            if parts[2].count != 4, full > current + 50 { full -= 100 }
            (day, month, year, time) = (Int(parts[0]), self.month(parts[1]), full, words[2])
        } else if words.count == 5 {
            (day, month, year, time) = (Int(words[2]), self.month(words[1]), Int(words[4]), words[3])
        }
        guard let day, let month, let year, let time else { return nil }
        let clock = time.split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (1...31).contains(day), (0...23).contains(clock[0]), (0...59).contains(clock[1]),
              (0...60).contains(clock[2]), (1...9999).contains(year) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day, hour: clock[0], minute: clock[1], second: clock[2])),
              calendar.component(.day, from: date) == day else { return nil }   // 31 Feb is not 3 Mar
        return date
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    private static func month(_ name: String) -> Int? {
        self.months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }
}
