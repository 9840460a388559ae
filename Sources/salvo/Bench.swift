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

    @Option(name: [.customShort("c", allowingJoined: true), .customLong("connections")], help: "Connections to keep open.")
    var connections = 10

    @Option(name: [.customShort("t", allowingJoined: true), .customLong("threads")], help: "Threads (event loops).")
    var threads = 2

    @Option(name: [.customShort("d", allowingJoined: true), .customLong("duration")], help: "Duration: 10s, 1m, 2h…")
    var duration = "10s"

    @Option(name: [.customShort("n", allowingJoined: true), .customLong("requests")], help: "Stop after this many responses.")
    var requests: Int?

    @Option(name: [.customShort("H", allowingJoined: true), .customLong("header")], help: "Header to send, \"Name: value\" (repeatable).")
    var headers: [String] = []

    @Option(name: .customLong("timeout"), help: "A response slower than this is a timeout error (default 2s).")
    var timeout = "2s"

    @Flag(name: .customLong("latency"), help: "Print the latency distribution.")
    var latency = false

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

    @Option(name: .customLong("unix-socket"), help: "Connect to this Unix domain socket instead of the URL's host.")
    var unixSocket: String?

    @Option(name: [.customShort("x"), .customLong("proxy")], help: "[http://][user:password@]host[:port] — go through this HTTP proxy.")
    var proxy: String?

    @Option(name: .customLong("callers"), help: "With --api: concurrent callers (default: connections × pipeline).")
    var callers: Int?

    @Option(name: [.customShort("R", allowingJoined: true), .customLong("rate")], help: "Constant request rate (requests/s, all connections).")
    var rate: Double?

    @Flag(name: .customLong("json"), help: "Print the report as JSON (histogram included, for merging).")
    var json = false

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not verify the server's TLS certificate.")
    var insecure = false

    @Option(name: .customLong("cacert"), help: "CA certificates (PEM file) to verify the server with.")
    var cacert: String?

    @Flag(name: .customLong("no-tls-resume"), help: "Do a full TLS handshake on every new connection.")
    var noTLSResume = false

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
        signal(SIGINT, SIG_IGN)
        let interrupts = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let count = InterruptCount()
        interrupts.setEventHandler {
            if count.increment() > 1 { Glibc.exit(130) }
            generator.stop()
        }
        interrupts.resume()
        defer { interrupts.cancel() }

        let interactive = isatty(1) != 0 && !self.json
        if !self.json {
            print("Running \(self.describeLength(configuration)) test @ \(configuration.url)")
        }
        if let start, !(await StartTime.wait(until: start, interrupted: { count.value > 0 })) {
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
        if self.json {
            print(try Self.encode(report))
        } else {
            print(report.text(latencyDistribution: self.latency))
        }
        if statistics.requests == 0 {
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
        if !self.json {
            print("Running \(self.describeLength(configuration)) test @ \(configuration.url) through the \(api.rawValue) API")
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
        print(self.json ? try Self.encode(report) : report.text(latencyDistribution: self.latency))
        if statistics.requests == 0 { throw ExitCode(1) }
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

    func describeLength(_ configuration: LoadConfiguration) -> String {
        if let limit = configuration.requestLimit, configuration.duration == .zero { return "\(limit)-request" }
        return self.duration
    }

    static func encode(_ report: LoadReport) throws -> String {
        struct Output: Encodable {
            var summary: LoadReport.Summary
            var report: LoadReport
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(Output(summary: report.summary, report: report))
        return String(decoding: data, as: UTF8.self)
    }

    func makeConfiguration() throws(TransportError) -> LoadConfiguration {
        let text = self.url.contains("://") ? self.url : "http://" + self.url
        var configuration = LoadConfiguration(url: try RequestURL(text))
        configuration.connections = self.connections
        configuration.threads = self.threads
        configuration.pipeline = self.pipeline
        configuration.http2 = self.http2
        configuration.streams = self.streams
        configuration.callers = self.callers
        configuration.connectionPerLoop = self.connectionPerLoop
        configuration.unixSocketPath = self.unixSocket
        if let proxy = self.proxy, !proxy.isEmpty { configuration.proxy = try HTTPProxy(proxy) }
        configuration.rate = self.rate
        configuration.requestLimit = self.requests
        if self.insecure { configuration.tls = .insecure }
        if let cacert = self.cacert { configuration.tls.trustRoots = .file(cacert) }
        configuration.tlsResumption = !self.noTLSResume
        guard let duration = LoadDuration.parse(self.duration) else {
            throw TransportError(.invalidConfiguration, detail: "invalid duration \"\(self.duration)\"")
        }
        // -n without -d runs until the count; with both, whichever comes first.
        configuration.duration = self.requests != nil && !CommandLine.arguments.contains(where: { $0 == "-d" || $0.hasPrefix("--duration") })
            ? .zero : duration
        guard let timeout = LoadDuration.parse(self.timeout), timeout > .zero else {
            throw TransportError(.invalidConfiguration, detail: "invalid timeout \"\(self.timeout)\"")
        }
        configuration.timeout = timeout
        guard let method = HTTPRequest.Method(self.method.uppercased()) else {
            throw TransportError(.invalidRequest, detail: "invalid method \"\(self.method)\"")
        }
        configuration.method = method
        for header in self.headers {
            guard let colon = header.firstIndex(of: ":"),
                  let name = HTTPField.Name(String(header[..<colon].trimmingOWS)) else {
                throw TransportError(.invalidRequest, detail: "invalid header \"\(header)\"")
            }
            configuration.headerFields.append(HTTPField(name: name, value: String(header[header.index(after: colon)...].trimmingOWS)))
        }
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

/// Counts Ctrl-C presses across the signal handler's runs.
final class InterruptCount: @unchecked Sendable {
    // @unchecked Sendable: touched only on the serial signal-source queue... which is the
    // global queue here, so a lock guards it.
    private let lock = NSLock()
    private var count = 0
    var value: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.count
    }
    func increment() -> Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.count += 1
        return self.count
    }
}

/// The live "elapsed, requests/s, errors" line on a terminal.
final class ProgressLine: @unchecked Sendable {
    // @unchecked Sendable: `timer` is created in start() and cancelled in stop(), both on
    // the command's task; the timer's handler only reads the generator's atomics.
    private let generator: LoadGenerator
    private var timer: (any DispatchSourceTimer)?
    private let started = ContinuousClock.now

    init(generator: LoadGenerator) { self.generator = generator }

    func start() {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        var last = (requests: 0, at: ContinuousClock.now)
        let generator = self.generator
        let started = self.started
        timer.setEventHandler {
            let now = ContinuousClock.now
            let (requests, errors) = generator.progress()
            let interval = now - last.at
            let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
            let rate = seconds > 0 ? Double(requests - last.requests) / seconds : 0
            last = (requests, now)
            let elapsed = (now - started).components.seconds
            let line = "\r  \(elapsed)s  \(requests) requests  \(Int(rate)) req/s  \(errors) errors   "
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.resume()
        self.timer = timer
    }

    func stop() {
        self.timer?.cancel()
        self.timer = nil
        FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8))
    }
}
