import SalvoTransport
#if canImport(Glibc)
import Glibc
#endif

/// A point on the monotonic clock, in nanoseconds. Cheap to read and compare on the hot path.
public struct Deadline: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The current time on the monotonic clock.
    @inline(__always)
    public static func now() -> Deadline {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Deadline(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    /// Never: later than any real deadline.
    public static let distantFuture = Deadline(nanoseconds: .max)

    public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// This deadline moved later by `duration` (saturating; negative durations count as zero).
    public static func + (lhs: Deadline, rhs: Duration) -> Deadline {
        lhs.adding(nanoseconds: rhs.nanosecondsClamped)
    }

    /// This deadline moved later by `nanoseconds` (saturating).
    @inline(__always)
    func adding(nanoseconds: UInt64) -> Deadline {
        let (sum, overflow) = self.nanoseconds.addingReportingOverflow(nanoseconds)
        return overflow ? .distantFuture : Deadline(nanoseconds: sum)
    }

    /// The time from `self` until `later`, zero when `later` has passed.
    func nanoseconds(until later: Deadline) -> UInt64 {
        later.nanoseconds > self.nanoseconds ? later.nanoseconds - self.nanoseconds : 0
    }
}

extension Duration {
    /// This duration in whole nanoseconds, clamped to 0...UInt64.max.
    package var nanosecondsClamped: UInt64 {
        // From the attoseconds in one division: `components` divides twice more (2–5× slower),
        // and this runs for every deadline a request sets.
        let attoseconds = self.attoseconds
        if attoseconds <= 0 { return 0 }
        if let small = Int64(exactly: attoseconds) {
            // Under about 9 s (most timeouts): a 64-bit division, not a 128-bit one.
            return UInt64(small / 1_000_000_000)
        }
        let nanoseconds = attoseconds / 1_000_000_000
        return nanoseconds > Int128(UInt64.max) ? .max : UInt64(nanoseconds)
    }
}
