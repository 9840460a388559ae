import Histogram

/// What a run (or one thread of it) measured. Values merge, so threads, and separate runs
/// saved as JSON, add up into one report.
public struct LoadStatistics: Sendable, Codable {
    /// Errors by kind, counted without stopping the run (as wrk counts them).
    public struct Errors: Sendable, Codable, Equatable {
        /// Connections that could not be made (refused, timed out).
        public var connect = 0
        /// Connections that failed or closed while responses were due.
        public var read = 0
        /// Requests that could not be written.
        public var write = 0
        /// Responses slower than the timeout.
        public var timeout = 0
        /// Responses with a status other than 2xx or 3xx (they are still responses).
        public var status = 0
        /// Responses that broke HTTP/1.1.
        public var `protocol` = 0

        public init() {}

        public var total: Int { self.connect + self.read + self.write + self.timeout + self.protocol }

        mutating func add(_ other: Errors) {
            self.connect += other.connect
            self.read += other.read
            self.write += other.write
            self.timeout += other.timeout
            self.status += other.status
            self.protocol += other.protocol
        }
    }

    /// Complete responses.
    public var requests = 0
    /// Bytes read from the server, heads included.
    public var bytesRead = 0
    /// Responses by status code.
    public var statusCounts: [Int: Int] = [:]
    public var errors = Errors()
    /// Connections established.
    public var connectionsOpened = 0
    /// Requests sent on a connection that had carried an earlier one.
    public var connectionsReused = 0
    /// Through a client API: requests the client wrote behind another on a busy connection.
    public var requestsPipelined = 0
    /// TLS handshakes that resumed an earlier session.
    public var tlsResumed = 0
    /// Wall time the run took, in nanoseconds.
    public var elapsedNanoseconds: UInt64 = 0
    /// Latency of every response, in microseconds.
    public var latency: Histogram<UInt64>
    /// A scripted run's checks, scenarios and script errors (nil for a run without a script).
    public var script: ScriptStatistics?
    /// Set when a run bounded by its request count alone ended early because nothing was
    /// answered for longer than the connect timeout and the response timeout allow.
    public var stalled: Bool?

    public init() {
        self.latency = Self.emptyLatency()
    }

    /// 1 µs to an hour, three significant digits: ~200 KiB, no allocation per record.
    static func emptyLatency() -> Histogram<UInt64> {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    }

    /// Adds another thread's or run's numbers to these. Elapsed time is the longest.
    public mutating func add(_ other: LoadStatistics) {
        self.requests += other.requests
        self.bytesRead += other.bytesRead
        self.statusCounts.merge(other.statusCounts, uniquingKeysWith: +)
        self.errors.add(other.errors)
        self.connectionsOpened += other.connectionsOpened
        self.connectionsReused += other.connectionsReused
        self.requestsPipelined += other.requestsPipelined
        self.tlsResumed += other.tlsResumed
        self.elapsedNanoseconds = max(self.elapsedNanoseconds, other.elapsedNanoseconds)
        self.latency.add(other.latency)
        if other.stalled == true { self.stalled = true }
        if let script = other.script {
            if self.script == nil { self.script = ScriptStatistics() }
            self.script?.add(script)
        }
    }

    public var elapsedSeconds: Double { Double(self.elapsedNanoseconds) / 1e9 }
    public var requestsPerSecond: Double { self.elapsedSeconds > 0 ? Double(self.requests) / self.elapsedSeconds : 0 }
    public var bytesPerSecond: Double { self.elapsedSeconds > 0 ? Double(self.bytesRead) / self.elapsedSeconds : 0 }
}

/// Counters a running thread publishes for the live progress line: plain atomics, written
/// by the loop a few times a second, read by the display.
import Synchronization

final class LiveCounters: Sendable {
    let requests = Atomic<Int>(0)
    let errors = Atomic<Int>(0)
}
