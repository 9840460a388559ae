import Histogram

/// A finished run in the shape reports are made of: the settings that matter for reading
/// the numbers, and the statistics. Encodes to the stable JSON of `salvo bench --json`
/// (histogram included, so runs can be merged) and renders wrk-style text.
public struct LoadReport: Sendable, Codable {
    /// The percentiles reported, in percent.
    public static let percentiles: [Double] = [50, 75, 90, 99, 99.9, 99.99]

    public var url: String
    public var connections: Int
    public var threads: Int
    public var pipeline: Int
    /// Requests per second asked for, when the run had a constant rate.
    public var rate: Double?
    /// When the load began, in seconds since 1970 (UTC): set by `salvo bench`, so that runs on
    /// several machines merge into one span of time.
    public var startedAt: Double?
    public var statistics: LoadStatistics

    public init(configuration: LoadConfiguration, statistics: LoadStatistics) {
        self.url = configuration.url.description
        self.connections = configuration.connections
        self.threads = configuration.threads
        self.pipeline = configuration.pipeline
        self.rate = configuration.rate
        self.statistics = statistics
    }

    /// Adds another report's statistics (its settings are not compared). Runs that say when
    /// they started span from the first start to the last end; others count as simultaneous
    /// (the longest run's time).
    public mutating func merge(_ other: LoadReport) {
        let span: (start: Double, end: Double)? = self.startedAt.flatMap { start in
            other.startedAt.map { otherStart in
                (min(start, otherStart), max(start + self.statistics.elapsedSeconds, otherStart + other.statistics.elapsedSeconds))
            }
        }
        self.statistics.add(other.statistics)
        self.connections += other.connections
        self.threads += other.threads
        if let span {
            self.startedAt = span.start
            self.statistics.elapsedNanoseconds = UInt64(max(0, (span.end - span.start) * 1e9).rounded())
        } else {
            self.startedAt = nil
        }
    }

    // MARK: JSON

    /// The machine-readable summary: every field is documented in docs/load-testing.md and
    /// keeps its name and unit across versions.
    public struct Summary: Codable, Sendable, Equatable {
        public var url: String
        public var connections: Int
        public var threads: Int
        public var pipeline: Int
        public var rate: Double?
        public var durationSeconds: Double
        public var requests: Int
        public var bytesRead: Int
        public var requestsPerSecond: Double
        public var bytesPerSecond: Double
        public var latencyMicroseconds: [String: Double]
        public var statusCounts: [String: Int]
        public var errors: LoadStatistics.Errors
        public var connectionsOpened: Int
        public var connectionsReused: Int
        public var requestsPipelined: Int
        /// A workload's checks, scenarios and script errors.
        public var script: ScriptStatistics?
        /// A run bounded by its request count that ended early: nothing was answered for
        /// longer than its timeouts allow (absent otherwise).
        public var stalled: Bool?

        enum CodingKeys: String, CodingKey {
            case url, connections, threads, pipeline, rate, requests, errors
            case durationSeconds = "duration_seconds"
            case bytesRead = "bytes_read"
            case requestsPerSecond = "requests_per_second"
            case bytesPerSecond = "bytes_per_second"
            case latencyMicroseconds = "latency_us"
            case statusCounts = "status_counts"
            case connectionsOpened = "connections_opened"
            case connectionsReused = "connections_reused"
            case requestsPipelined = "requests_pipelined"
            case script, stalled
        }
    }

    public var summary: Summary {
        let s = self.statistics
        var latency: [String: Double] = [:]
        if s.latency.totalCount > 0 {
            latency["min"] = Double(s.latency.min)
            latency["mean"] = s.latency.mean
            latency["stdev"] = s.latency.stdDeviation
            latency["max"] = Double(s.latency.max)
            for p in Self.percentiles {
                latency["p" + Self.percentileKey(p)] = Double(s.latency.valueAtPercentile(p))
            }
        }
        return Summary(
            url: self.url, connections: self.connections, threads: self.threads, pipeline: self.pipeline,
            rate: self.rate, durationSeconds: s.elapsedSeconds, requests: s.requests, bytesRead: s.bytesRead,
            requestsPerSecond: s.requestsPerSecond, bytesPerSecond: s.bytesPerSecond, latencyMicroseconds: latency,
            statusCounts: Dictionary(uniqueKeysWithValues: s.statusCounts.map { (String($0.key), $0.value) }),
            errors: s.errors, connectionsOpened: s.connectionsOpened, connectionsReused: s.connectionsReused,
            requestsPipelined: s.requestsPipelined, script: s.script, stalled: s.stalled)
    }

    /// "50", "99_9", "99_99": percentile names usable as JSON keys.
    static func percentileKey(_ p: Double) -> String {
        let text = p == p.rounded() ? String(Int(p)) : String(p)
        return text.replacingDots()
    }

    // MARK: Text

    /// wrk's report layout, plus status counts and connection reuse.
    public func text(latencyDistribution: Bool) -> String {
        let s = self.statistics
        var lines: [String] = []
        lines.append("  \(self.threads) threads and \(self.connections) connections"
            + (self.pipeline > 1 ? ", pipeline \(self.pipeline)" : "")
            + (self.rate.map { ", \(Self.number($0)) requests/s asked" } ?? ""))
        if s.latency.totalCount > 0 {
            lines.append("  Thread Stats   Avg      Stdev     Max   +/- Stdev")
            let mean = s.latency.mean
            let sd = s.latency.stdDeviation
            let low = UInt64(max(0, mean - sd))
            let high = UInt64(mean + sd)
            let within = Double(s.latency.count(within: low...max(low, high))) / Double(s.latency.totalCount) * 100
            lines.append("    Latency " + Self.pad(Self.time(mean), 9) + Self.pad(Self.time(sd), 10)
                + Self.pad(Self.time(Double(s.latency.max)), 9) + Self.pad(Self.fixed2(within) + "%", 10))
            if latencyDistribution {
                lines.append("  Latency Distribution")
                for p in Self.percentiles {
                    let label = (p == p.rounded() ? String(Int(p)) : String(p)) + "%"
                    lines.append(Self.pad(label, 9) + Self.pad(Self.time(Double(s.latency.valueAtPercentile(p))), 10))
                }
                lines.append(Self.pad("max", 9) + Self.pad(Self.time(Double(s.latency.max)), 10))
            }
        }
        lines.append("  \(s.requests) requests in \(Self.fixed2(s.elapsedSeconds))s, \(Self.bytes(Double(s.bytesRead))) read")
        if !s.statusCounts.isEmpty {
            lines.append("  Status codes: " + s.statusCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        let e = s.errors
        if e.connect + e.read + e.write + e.timeout > 0 {
            lines.append("  Socket errors: connect \(e.connect), read \(e.read), write \(e.write), timeout \(e.timeout)")
        }
        if e.protocol > 0 { lines.append("  Protocol errors: \(e.protocol)") }
        if e.status > 0 {
            lines.append("  Non-2xx or 3xx responses: \(e.status)")
        }
        if let script = s.script { lines += Self.lines(script) }
        if s.stalled == true {
            lines.append("  Stopped early: nothing was answered for longer than the timeouts allow; the request count was not reached")
        }
        lines.append("  Connections: \(s.connectionsOpened) opened (\(Self.fixed2(s.elapsedSeconds > 0 ? Double(s.connectionsOpened) / s.elapsedSeconds : 0))/s)"
            + (s.tlsResumed > 0 ? ", \(s.tlsResumed) TLS sessions resumed" : "")
            + ", \(s.connectionsReused) requests on reused connections"
            + (s.requestsPipelined > 0 ? ", \(s.requestsPipelined) pipelined by the client" : ""))
        lines.append("Requests/sec: " + Self.pad(Self.fixed2(s.requestsPerSecond), 10))
        lines.append("Transfer/sec: " + Self.pad(Self.bytes(s.bytesPerSecond), 10))
        return lines.joined(separator: "\n")
    }

    /// A workload's part of the report: each check's passes and failures, the responses by
    /// scenario, the script's errors.
    static func lines(_ script: ScriptStatistics) -> [String] {
        var lines: [String] = []
        if !script.checks.isEmpty {
            let width = max(20, script.checks.keys.map(\.count).max() ?? 0)
            lines.append("  Checks" + String(repeating: " ", count: width + 1) + Self.pad("passed", 7) + Self.pad("failed", 10))
            for (name, count) in script.checks.sorted(by: { $0.key < $1.key }) {
                let padded = name + String(repeating: " ", count: width - name.count)
                lines.append("    " + (count.failed == 0 ? "ok  " : "FAIL") + " " + padded
                    + Self.pad(String(count.passed), 7) + Self.pad(String(count.failed), 10))
            }
        }
        if !script.scenarios.isEmpty {
            lines.append("  Scenarios: " + script.scenarios.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if !script.unanswered.isEmpty {
            lines.append("  Unanswered calls: " + script.unanswered.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if script.scriptErrors > 0 {
            lines.append("  Script errors: \(script.scriptErrors)" + (script.firstScriptError.map { " (first: \($0))" } ?? ""))
        }
        return lines
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func fixed2(_ value: Double) -> String {
        guard value.isFinite else { return "-" }
        let hundredths = Int((value * 100).rounded())
        let sign = hundredths < 0 ? "-" : ""
        let magnitude = abs(hundredths)
        let fraction = magnitude % 100
        return "\(sign)\(magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : fixed2(value)
    }

    /// Microseconds as wrk prints them: us, ms or s.
    static func time(_ microseconds: Double) -> String {
        if microseconds < 1000 { return fixed2(microseconds) + "us" }
        if microseconds < 1_000_000 { return fixed2(microseconds / 1000) + "ms" }
        return fixed2(microseconds / 1_000_000) + "s"
    }

    /// Bytes in binary units, as wrk prints them.
    static func bytes(_ value: Double) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var scaled = value
        var unit = 0
        while scaled >= 1024 && unit < units.count - 1 {
            scaled /= 1024
            unit += 1
        }
        return fixed2(scaled) + units[unit]
    }
}

extension String {
    func replacingDots() -> String {
        String(self.map { $0 == "." ? "_" : $0 })
    }
}
