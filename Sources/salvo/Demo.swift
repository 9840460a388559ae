import ArgumentParser
import CSalvo
import HTTPTypes
import SalvoCore
#if canImport(Glibc)
import Glibc
#endif

/// `salvo demo URL`: a burst of requests through one client's pool, and what happened.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a burst of concurrent requests through the pool and summarize them.")

    @Argument(help: "The http URL.")
    var url: String

    @Option(name: [.customShort("n"), .customLong("requests")], help: "Requests to send.")
    var requests = 20_000

    @Option(name: [.customShort("c"), .customLong("concurrency")], help: "Requests in flight at once.")
    var concurrency = 64

    @Option(name: .customLong("connections"), help: "Pool size (connections per host).")
    var connections = 16

    @Option(name: [.customShort("t"), .customLong("threads")], help: "Event loop threads (default: one per core).")
    var threads: Int?

    @Flag(name: .customLong("report-memory"), help: "After the burst, print the resident memory with the connections idle in the pool.")
    var reportMemory = false

    func run() async throws {
        guard self.requests > 0, self.concurrency > 0, self.connections > 0 else {
            throw ValidationError("requests, concurrency and connections must be positive")
        }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = self.connections
        if let threads = self.threads {
            guard threads > 0 else { throw ValidationError("threads must be positive") }
            configuration.threads = threads
        }
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        let request = try HTTPRequest(method: .get, url: self.url)

        let start = ContinuousClock.now
        let perWorker = self.requests / self.concurrency
        let extra = self.requests % self.concurrency
        let results = await withTaskGroup(of: DemoResult.self) { group in
            for worker in 0..<self.concurrency {
                let count = perWorker + (worker < extra ? 1 : 0)
                group.addTask {
                    var result = DemoResult()
                    for _ in 0..<count {
                        let began = ContinuousClock.now
                        do throws(TransportError) {
                            let response = try await client.execute(request)
                            result.statuses[response.status.code, default: 0] += 1
                        } catch {
                            result.errors[error.code.description, default: 0] += 1
                        }
                        result.latencies.append(ContinuousClock.now - began)
                    }
                    return result
                }
            }
            var all = DemoResult()
            for await part in group { all.merge(part) }
            return all
        }
        let elapsed = ContinuousClock.now - start
        let statistics = await client.poolStatistics()
        print(results.report(elapsed: elapsed, statistics: statistics, url: self.url, concurrency: self.concurrency))
        if self.reportMemory {
            // What the burst's finished tasks freed goes back to the system first: the number
            // is then what the idle connections hold, not the allocator's high-water mark.
            salvo_malloc_trim()
            print("memory: \(Self.residentKilobytes()) KiB resident, \(salvo_heap_in_use() / 1024) KiB of heap in use, with \(statistics.openConnections) connections idle in the pool")
        }
    }
}

extension Demo {
    /// VmRSS from /proc/self/status, in KiB.
    static func residentKilobytes() -> Int {
        guard let bytes = Output.readFile("/proc/self/status") else { return -1 }
        let text = String(decoding: bytes, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
        }
        return -1
    }
}

struct DemoResult: Sendable {
    var statuses: [Int: Int] = [:]
    var errors: [String: Int] = [:]
    var latencies: [Duration] = []

    mutating func merge(_ other: DemoResult) {
        self.statuses.merge(other.statuses, uniquingKeysWith: +)
        self.errors.merge(other.errors, uniquingKeysWith: +)
        self.latencies += other.latencies
    }

    func report(elapsed: Duration, statistics: PoolStatistics, url: String, concurrency: Int) -> String {
        let sorted = self.latencies.sorted()
        func percentile(_ p: Double) -> String {
            guard !sorted.isEmpty else { return "-" }
            let index = min(sorted.count - 1, Int((Double(sorted.count) * p / 100).rounded(.up)) - 1)
            return Self.format(sorted[max(0, index)])
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var lines = [
            "\(self.latencies.count) requests to \(url), \(concurrency) at a time, in \(String(format2: seconds)) s"
                + " (\(Int(Double(self.latencies.count) / max(seconds, 1e-9))) requests/s)",
            "status: " + self.statuses.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "),
        ]
        if !self.errors.isEmpty {
            lines.append("errors: " + self.errors.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))
        }
        lines.append("latency: p50 \(percentile(50))  p90 \(percentile(90))  p99 \(percentile(99))  max \(sorted.last.map(Self.format) ?? "-")")
        lines.append("connections: \(statistics.connectionsOpened) opened, \(statistics.connectionsReused) requests on reused connections")
        return lines.joined(separator: "\n")
    }

    static func format(_ duration: Duration) -> String {
        let micros = Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
        return micros < 1000 ? "\(Int(micros)) µs" : "\(String(format2: micros / 1000)) ms"
    }
}

extension String {
    /// Two decimals without Foundation.
    init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = abs(hundredths % 100)
        self = "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
