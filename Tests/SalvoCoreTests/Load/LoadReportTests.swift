import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore
@testable import SalvoLoad

@Suite struct LoadReportTests {
    /// Status codes are counted by runs; every response is counted, whatever the order.
    @Test func aCallersStatusCodesAreAllCounted() {
        let latencies = SharedLatencies()
        var tally = CallerTally(latencies: latencies)
        for code in [200, 200, 404, 200, 503, 503, 200] {
            let sent = Deadline(nanoseconds: Deadline.now().nanoseconds - 50_000)
            tally.record(CollectedResponse(head: HTTPResponse(status: .init(code: code)), body: [1, 2]), since: sent)
        }
        let counts = tally.finished()
        #expect(counts.statusCounts == [200: 4, 404: 1, 503: 2])
        #expect(counts.requests == 7 && counts.bytesRead == 14 && counts.errors.status == 3)
        #expect(latencies.histogram.totalCount == 7)
        #expect(latencies.histogram.min >= 50, "latencies in microseconds, from the send")
        var empty = CallerTally(latencies: latencies)
        #expect(empty.finished().statusCounts.isEmpty)
        #expect(latencies.histogram.totalCount == 7)
    }

    @Test func durations() {
        #expect(LoadDuration.parse("10s") == .seconds(10))
        #expect(LoadDuration.parse("1m") == .seconds(60))
        #expect(LoadDuration.parse("2h") == .seconds(7200))
        #expect(LoadDuration.parse("500ms") == .milliseconds(500))
        #expect(LoadDuration.parse("250us") == .microseconds(250))
        #expect(LoadDuration.parse("1.5s") == .milliseconds(1500))
        #expect(LoadDuration.parse("3") == .seconds(3))
        for bad in ["", "s", "-1s", "1x", "abc", "1e3s", "inf"] {
            #expect(LoadDuration.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func units() {
        #expect(LoadReport.time(12.345) == "12.35us")
        #expect(LoadReport.time(1234) == "1.23ms")
        #expect(LoadReport.time(2_500_000) == "2.50s")
        #expect(LoadReport.bytes(512) == "512.00B")
        #expect(LoadReport.bytes(1536) == "1.50KB")
        #expect(LoadReport.bytes(3 * 1024 * 1024) == "3.00MB")
        #expect(LoadReport.fixed2(0.005) == "0.01")
        #expect(LoadReport.fixed2(-1.5) == "-1.50")
        #expect(LoadReport.percentileKey(99.9) == "99_9")
        #expect(LoadReport.percentileKey(50) == "50")
    }

    func sample(requests: Int, latency: UInt64) -> LoadStatistics {
        var statistics = LoadStatistics()
        statistics.requests = requests
        statistics.bytesRead = requests * 100
        statistics.statusCounts = [200: requests - 1, 503: 1]
        statistics.errors.status = 1
        statistics.connectionsOpened = 4
        statistics.connectionsReused = requests - 4
        statistics.elapsedNanoseconds = 2_000_000_000
        for i in 0..<requests { _ = statistics.latency.record(latency + UInt64(i % 10)) }
        return statistics
    }

    @Test func textLikeWrk() throws {
        var configuration = LoadConfiguration(url: try RequestURL("http://127.0.0.1:8080/x"))
        configuration.connections = 4
        configuration.threads = 2
        let report = LoadReport(configuration: configuration, statistics: self.sample(requests: 1000, latency: 400))
        let text = report.text(latencyDistribution: true)
        #expect(text.contains("  2 threads and 4 connections"))
        #expect(text.contains("Latency Distribution"))
        #expect(text.contains("     50%"))
        #expect(text.contains("  99.99%"))
        #expect(text.contains("1000 requests in 2.00s, 97.66KB read"))
        #expect(text.contains("Non-2xx or 3xx responses: 1"))
        #expect(text.contains("Requests/sec:     500.00"))
        #expect(!text.contains("Socket errors"), "no socket errors, no line")
    }

    @Test func jsonRoundTripAndMerge() throws {
        var configuration = LoadConfiguration(url: try RequestURL("http://127.0.0.1:8080/x"))
        configuration.connections = 4
        let first = LoadReport(configuration: configuration, statistics: self.sample(requests: 1000, latency: 400))
        let second = LoadReport(configuration: configuration, statistics: self.sample(requests: 500, latency: 4000))
        let data = try JSONEncoder().encode(second)
        let decoded = try JSONDecoder().decode(LoadReport.self, from: data)
        var merged = first
        merged.merge(decoded)
        #expect(merged.statistics.requests == 1500)
        #expect(merged.statistics.statusCounts[503] == 2)
        #expect(merged.statistics.latency.totalCount == 1500)
        #expect(merged.statistics.latency.max >= 4000)
        let summary = merged.summary
        #expect(summary.requests == 1500)
        #expect(summary.latencyMicroseconds["p50"] != nil)
        #expect(summary.latencyMicroseconds["p99_99"] != nil)
        let summaryJSON = String(decoding: try JSONEncoder().encode(summary), as: UTF8.self)
        for key in ["\"requests_per_second\"", "\"latency_us\"", "\"status_counts\"", "\"connections_opened\"", "\"bytes_read\""] {
            #expect(summaryJSON.contains(key), "\(key)")
        }
    }

    @Test func runsWithStartTimesMergeOverTheirSpan() throws {
        let configuration = LoadConfiguration(url: try RequestURL("http://127.0.0.1:8080/x"))
        var first = LoadReport(configuration: configuration, statistics: self.sample(requests: 1000, latency: 400))
        first.startedAt = 100          // 2 s: 100 to 102
        var second = LoadReport(configuration: configuration, statistics: self.sample(requests: 500, latency: 400))
        second.startedAt = 101.5       // 2 s: 101.5 to 103.5
        let decoded = try JSONDecoder().decode(LoadReport.self, from: try JSONEncoder().encode(second))
        #expect(decoded.startedAt == 101.5)
        var merged = first
        merged.merge(decoded)
        #expect(merged.startedAt == 100)
        #expect(merged.statistics.elapsedSeconds == 3.5)
        #expect(merged.summary.requestsPerSecond == 1500 / 3.5)

        // A report without a start time (an older run): simultaneous, the longest run's time.
        var unknown = LoadReport(configuration: configuration, statistics: self.sample(requests: 10, latency: 400))
        unknown.startedAt = nil
        merged.merge(unknown)
        #expect(merged.startedAt == nil)
        #expect(merged.statistics.elapsedSeconds == 3.5)
    }

    @Test func invalidConfigurations() throws {
        let url = try RequestURL("http://127.0.0.1:8080/")
        var configuration = LoadConfiguration(url: url)
        configuration.threads = 4
        configuration.connections = 2
        #expect(throws: TransportError.self) { try configuration.validate() }
        configuration = LoadConfiguration(url: url)
        configuration.rate = 100
        configuration.pipeline = 4
        #expect(throws: TransportError.self) { try configuration.validate() }
        configuration = LoadConfiguration(url: url)
        configuration.rate = -1
        #expect(throws: TransportError.self) { try configuration.validate() }
        configuration = LoadConfiguration(url: url)
        configuration.requestLimit = 0
        #expect(throws: TransportError.self) { try configuration.validate() }
    }
}
