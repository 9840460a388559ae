import Foundation

/// `salvo bench --start-at`: one wall-clock time for runs on several machines, so that their
/// loads overlap and their reports merge into one span.
enum StartTime {
    /// The furthest ahead a start may be.
    static let longestWait: Double = 24 * 3600

    /// Seconds since 1970 (UTC), from the wall clock.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// An RFC 3339 time (`2026-11-26T08:00:00Z`, `…00.250+01:00`) or seconds since 1970
    /// (`1795680000`, `1795680000.5`).
    static func parse(_ text: String) -> Double? {
        if let seconds = Double(text), seconds.isFinite, seconds >= 0 { return seconds }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)?.timeIntervalSince1970
    }

    /// Sleeps until `time` (at once if it has passed), a slice at a time so that Ctrl-C is
    /// heard: false when `interrupted` says to give up.
    static func wait(until time: Double, interrupted: @Sendable () -> Bool) async -> Bool {
        while true {
            let left = time - Self.now()
            if left <= 0 { return true }
            if interrupted() || Task.isCancelled { return false }
            try? await Task.sleep(for: .milliseconds(Int(min(left, 0.1) * 1000) + 1))
        }
    }
}
