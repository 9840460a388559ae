/// HTTP dates (RFC 9110 §5.6.7) as seconds since 1970, without Foundation's formatters: the
/// cache reads `Date`, `Expires`, `Last-Modified` and `If-Modified-Since` on every lookup.
///
/// Parsing is strict about layout and lenient about letter case only: the IMF-fixdate form
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), and the two obsolete forms (RFC 850
/// `Sunday, 06-Nov-94 08:49:37 GMT`, asctime `Sun Nov  6 08:49:37 1994`) as RFC 9110 asks
/// recipients to accept them. Anything else — another zone, a one-digit hour, two spaces —
/// is not a date (an `Expires` that is not a
/// date means "already expired", RFC 9111 §5.3).
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    /// Seconds since 1970 for `text`, nil when it is not an HTTP date.
    static func parse(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        return Self.imfFixdate(bytes) ?? Self.rfc850(bytes) ?? Self.asctime(bytes)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ b: [UInt8]) -> Double? {
        guard b.count == 29, Self.shortDays.contains(Self.word(b, 0, 3)), b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20,
              b[16] == 0x20, Self.text(b, 25, 4).uppercased() == " GMT",
              let day = Self.number(b, 5, 2), let month = Self.months.firstIndex(of: Self.word(b, 8, 3)),
              let year = Self.number(b, 12, 4), let time = Self.time(b, 17) else { return nil }
        return Self.seconds(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year within 50 years of 2000).
    private static func rfc850(_ b: [UInt8]) -> Double? {
        guard let comma = b.firstIndex(of: 0x2C), Self.longDays.contains(Self.word(b, 0, comma)), b.count == comma + 24,
              b[comma + 1] == 0x20, b[comma + 4] == 0x2D, b[comma + 8] == 0x2D, b[comma + 11] == 0x20,
              Self.text(b, comma + 20, 4).uppercased() == " GMT",
              let day = Self.number(b, comma + 2, 2), let month = Self.months.firstIndex(of: Self.word(b, comma + 5, 3)),
              let shortYear = Self.number(b, comma + 9, 2), let time = Self.time(b, comma + 12) else { return nil }
        // RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is in the past century
        // (read from 2026 on: up to 76 is this century).
        let year = shortYear <= 76 ? 2000 + shortYear : 1900 + shortYear
        return Self.seconds(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994`
    private static func asctime(_ b: [UInt8]) -> Double? {
        guard b.count == 24, Self.shortDays.contains(Self.word(b, 0, 3)), b[3] == 0x20, b[7] == 0x20, b[10] == 0x20, b[19] == 0x20,
              let month = Self.months.firstIndex(of: Self.word(b, 4, 3)),
              let day = b[8] == 0x20 ? Self.number(b, 9, 1) : Self.number(b, 8, 2),
              let time = Self.time(b, 11), let year = Self.number(b, 20, 4) else { return nil }
        return Self.seconds(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for `seconds` since 1970.
    static func format(_ seconds: Double) -> String {
        // A clock that says something absurd (NaN, before 1970, past year 9999) gives the
        // nearest date there is rather than a trap.
        let whole = seconds.isNaN ? 0 : Int(min(max(seconds, 0), 253_402_300_799).rounded(.down))
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let secondOfDay = whole - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        let weekday = Self.shortDays[((days % 7) + 7 + 3) % 7]   // 1970-01-01 was a Thursday
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(day)) \(Self.months[month - 1]) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    private static func text(_ b: [UInt8], _ start: Int, _ count: Int) -> String {
        guard start >= 0, start + count <= b.count else { return "" }
        return String(decoding: b[start..<start + count], as: UTF8.self)
    }

    /// A day or month name as the tables spell it (`THU`, `thu` → `Thu`).
    private static func word(_ b: [UInt8], _ start: Int, _ count: Int) -> String {
        let text = Self.text(b, start, count)
        return text.prefix(1).uppercased() + text.dropFirst().lowercased()
    }

    private static func number(_ b: [UInt8], _ start: Int, _ count: Int) -> Int? {
        guard start + count <= b.count else { return nil }
        var value = 0
        for byte in b[start..<start + count] {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// `hh:mm:ss` at `start`, as seconds into the day.
    private static func time(_ b: [UInt8], _ start: Int) -> Int? {
        guard start + 8 <= b.count, b[start + 2] == 0x3A, b[start + 5] == 0x3A,
              let hour = Self.number(b, start, 2), let minute = Self.number(b, start + 3, 2), let second = Self.number(b, start + 6, 2),
              hour < 24, minute < 60, second < 61 else { return nil }
        return hour * 3600 + minute * 60 + second
    }

    private static func seconds(year: Int, month: Int, day: Int, time: Int) -> Double? {
        guard (1...31).contains(day) else { return nil }
        return Double(Self.days(year: year, month: month, day: day) * 86_400 + time)
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's method).
    private static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
