import ArgumentParser
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import SalvoCore
import SalvoLoad

/// `salvo bench`: wrk's flags and report, on Salvo's loops.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load-test an HTTP server (wrk-compatible options).",
        discussion: """
        Runs closed-loop by default: each connection sends its next request when the last
        response arrives. With --rate, requests go out on a fixed schedule and latency counts
        from when each was due (no coordinated omission).
        """)

    @Argument(help: "The http URL.")
    var url: String

    @OptionGroup var options: LoadOptions

    @Option(name: [.customShort("X", allowingJoined: true), .customLong("method")], help: "Request method.")
    var method = "GET"

    @Option(name: .customLong("body"), help: "Request body; @file reads a file.")
    var body: String?

    @Option(name: .customLong("pipeline"), help: "Requests in flight per connection (HTTP/1.1 pipelining; with --api, the client's pipelining depth and that many callers per connection).")
    var pipeline = 1

    @Flag(name: .customLong("http2"), help: "Speak HTTP/2: with prior knowledge for http://, through ALPN (h2 only) for https://.")
    var http2 = false

    @Option(name: .customLong("streams"), help: "With --http2: requests in flight per connection, each on its own stream (h2load's -m).")
    var streams = 1

    @Option(name: .customLong("callers"), help: "With --api: concurrent callers (default: connections × pipeline).")
    var callers: Int?

    @Option(name: .customLong("api"), help: "Drive the load through: native (default), async, async-loop, callbacks, or a prepared call: prepared-async, prepared-async-loop, prepared-callbacks.")
    var api = "native"

    @Flag(name: .customLong("connection-per-loop"), help: "With --api and --http2: each thread opens its own connection instead of all threads sharing one.")
    var connectionPerLoop = false

    @Option(name: .customLong("start-at"), help: "Begin the load at this time — 2026-11-26T08:00:00Z, or seconds since 1970 — so that runs on several machines start together; a time already past begins at once.")
    var startAt: String?

    mutating func run() async throws {
        var configuration: LoadConfiguration
        do {
            configuration = try self.makeConfiguration()
        } catch {
            throw ValidationError(error.description)
        }
        let start = try self.startTime()
        if self.connectionPerLoop && (self.api == "native" || !self.http2) {
            throw ValidationError("--connection-per-loop applies to a client API over HTTP/2: give --api and --http2")
        }
        if self.api != "native" {
            guard let api = ClientAPI(rawValue: self.api) else {
                throw ValidationError("--api must be native, \(ClientAPI.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            if let start { _ = await StartTime.wait(until: start, interrupted: { false }) }
            try await self.runThroughClient(configuration, api: api)
            return
        }
        let generator: LoadGenerator
        do {
            generator = try LoadGenerator(configuration: configuration)
        } catch {
            throw BenchFailure(error)
        }

        // Ctrl-C stops the run and prints what it measured; a second one quits at once.
        let interrupts = LoadConsole.stopOnInterrupt { generator }
        defer { interrupts.cancel() }

        let interactive = isatty(1) != 0 && !self.options.json
        if !self.options.json {
            print("Running \(self.options.describeLength(configuration)) test @ \(configuration.url)")
        }
        let presses = interrupts.count
        if let start, !(await StartTime.wait(until: start, interrupted: { presses.value > 0 })) {
            throw ExitCode(130)
        }
        let startedAt = StartTime.now()
        let progress = interactive ? ProgressLine(generator: generator) : nil
        progress?.start()
        let statistics: LoadStatistics
        do {
            statistics = try await generator.run()
        } catch {
            progress?.stop()
            throw BenchFailure(error)
        }
        progress?.stop()
        var report = LoadReport(configuration: configuration, statistics: statistics)
        report.startedAt = startedAt
        if self.options.json {
            print(try report.jsonText())
        } else {
            print(report.text(latencyDistribution: self.options.latency))
        }
        if statistics.requests == 0 || statistics.stalled == true {
            throw ExitCode(1)
        }
    }

    /// The same run through HTTPClient's public APIs (no progress line, no Ctrl-C handling).
    func runThroughClient(_ configuration: LoadConfiguration, api: ClientAPI) async throws {
        let load: ClientLoad
        do {
            load = try ClientLoad(configuration: configuration, api: api)
        } catch {
            throw BenchFailure(error)
        }
        if !self.options.json {
            print("Running \(self.options.describeLength(configuration)) test @ \(configuration.url) through the \(api.rawValue) API")
        }
        let startedAt = StartTime.now()
        let statistics: LoadStatistics
        do {
            statistics = try await load.run()
        } catch {
            throw BenchFailure(error)
        }
        var report = LoadReport(configuration: configuration, statistics: statistics)
        report.startedAt = startedAt
        print(self.options.json ? try report.jsonText() : report.text(latencyDistribution: self.options.latency))
        if statistics.requests == 0 || statistics.stalled == true { throw ExitCode(1) }
    }

    /// `--start-at` as seconds since 1970; nil without it.
    func startTime() throws -> Double? {
        guard let text = self.startAt else { return nil }
        guard let time = StartTime.parse(text) else {
            throw ValidationError("--start-at takes a time like 2026-11-26T08:00:00Z, or seconds since 1970: \"\(text)\"")
        }
        let ahead = time - StartTime.now()
        guard ahead <= StartTime.longestWait else {
            throw ValidationError("--start-at is \(String(format: "%.0f", ahead)) s away; a run waits a day at the most")
        }
        if ahead < -1 {
            FileHandle.standardError.write(Data("salvo bench: --start-at was \(String(format: "%.1f", -ahead)) s ago; starting now\n".utf8))
        }
        return time
    }

    func makeConfiguration() throws(TransportError) -> LoadConfiguration {
        var configuration = try self.options.configuration(url: self.url)
        configuration.pipeline = self.pipeline
        configuration.http2 = self.http2
        configuration.streams = self.streams
        configuration.callers = self.callers
        configuration.connectionPerLoop = self.connectionPerLoop
        guard let method = HTTPRequest.Method(self.method.uppercased()) else {
            throw TransportError(.invalidRequest, detail: "invalid method \"\(self.method)\"")
        }
        configuration.method = method
        if let body = self.body {
            if body.hasPrefix("@") {
                guard let bytes = Output.readFile(String(body.dropFirst())) else {
                    throw TransportError(.invalidRequest, detail: "cannot read \(body.dropFirst())")
                }
                configuration.body = bytes
            } else {
                configuration.body = Array(body.utf8)
            }
            if self.method == "GET" && !CommandLine.arguments.contains(where: { $0 == "-X" || $0.hasPrefix("--method") }) {
                configuration.method = .post
            }
        }
        return configuration
    }
}

/// A run that could not happen (unsupported scheme, unresolvable host): one line, exit 1,
/// no usage text (that is for mistakes in the flags).
struct BenchFailure: Error, CustomStringConvertible {
    let error: TransportError
    init(_ error: TransportError) { self.error = error }
    var description: String { self.error.description }
}
