/// Durations as wrk writes them: `10s`, `1m`, `2h`, `500ms`, `250us`, or bare seconds.
public enum LoadDuration {
    /// Parses `text`, or returns nil when it is not a duration.
    public static func parse(_ text: String) -> Duration? {
        let lowered = text.lowercased()
        let units: [(String, Double)] = [("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("ns", 1e-9),
                                         ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var number = Substring(lowered)
        var scale = 1.0
        for (suffix, factor) in units where lowered.hasSuffix(suffix) {
            number = lowered.dropLast(suffix.count)
            scale = factor
            break
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isNumber || $0 == "." }),
              let value = Double(number), value.isFinite, value >= 0 else { return nil }
        let seconds = value * scale
        guard seconds < 1e9 else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
