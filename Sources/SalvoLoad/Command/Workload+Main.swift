import ArgumentParser
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A workload's own command line: `salvo bench`'s options, an optional URL, and `--strict`.
struct WorkloadArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        // Usage lines name the workload's own executable.
        commandName: CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "workload") },
        abstract: "Runs this workload: its virtual users, one per connection, calling the URL's server.",
        discussion: "Closed-loop by default: each user makes its next call when the last response (and its "
            + "think time) is over. With --rate, calls go out on a fixed schedule and latency counts from when each "
            + "was due. The report adds each check's passes and failures, the responses of each scenario, and the "
            + "script's own errors.")

    @Argument(help: "The server's URL: its scheme, host and port pick the server; its path is the scenarios' default.")
    var url: String?

    @OptionGroup var options: LoadOptions

    @Flag(name: .customLong("http2"), help: "Speak HTTP/2: with prior knowledge for http://, through ALPN (h2 only) for https://; each user's calls on its own connection, one stream at a time.")
    var http2 = false

    @Flag(name: .customLong("strict"), help: "Exit with status 1 when a check failed or the script failed.")
    var strict = false
}

extension Workload {
    /// Runs the workload as a command: parses `arguments` (the process's own when nil) with
    /// `salvo bench`'s options (`-c`, `-t`, `-d`, `-n`, `-R`, `-H`, `--latency`, `--json`, TLS,
    /// proxy…), runs it with a progress line and Ctrl-C to stop, prints the report, and exits:
    /// 0; 1 when no response came, a `-n` run stalled, or setup, the load or teardown failed
    /// (with `--strict`, also when a check or the script failed); 2 for options or a workload
    /// it cannot run with.
    ///
    /// ```swift
    /// // Sources/Load/main.swift of a package that depends on Salvo's SalvoLoad:
    /// import SalvoLoad
    ///
    /// let workload = Workload(scenarios: [
    ///     Scenario("home", checks: [.status(200)]) { _, request in request.path = "/" },
    /// ])
    /// await workload.main(url: "http://127.0.0.1:8080")
    /// ```
    ///
    /// - Parameters:
    ///   - url: the URL when the command line gives none.
    ///   - arguments: the command line to read, without the program's name; nil reads the
    ///     process's own.
    public func main(url: String? = nil, arguments: [String]? = nil) async -> Never {
        exit(await self.command(url: url, arguments: arguments))
    }

    /// ``main(url:arguments:)``'s work; returns the exit status.
    func command(url defaultURL: String?, arguments: [String]?) async -> Int32 {
        let parsed: WorkloadArguments
        do {
            parsed = try WorkloadArguments.parse(arguments ?? Array(CommandLine.arguments.dropFirst()))
        } catch {
            let message = WorkloadArguments.fullMessage(for: error)
            if WorkloadArguments.exitCode(for: error) == .success {   // --help
                Swift.print(message)
                return 0
            }
            FileHandle.standardError.write(Data((message + "\n").utf8))   // ArgumentParser's own wording
            return 2
        }
        let options = parsed.options
        guard let url = parsed.url ?? defaultURL else {
            Self.complain("no URL: give the server's URL (http://127.0.0.1:8080)")
            return 2
        }
        var configuration: LoadConfiguration
        do {
            configuration = try options.configuration(url: url)
            configuration.http2 = parsed.http2
            // Refused before anything is said of a run.
            try self.validate(configuration)
        } catch {
            Self.complain("\(error)")
            return 2
        }
        let running = LoadGeneratorBox()
        let interrupts = LoadConsole.stopOnInterrupt { running.generator }
        defer { interrupts.cancel() }
        let interactive = isatty(1) != 0 && !options.json
        if !options.json { Swift.print("Running \(options.describeLength(configuration)) workload @ \(configuration.url)") }
        let progress = ProgressBox()
        let startedAt = Date().timeIntervalSince1970
        let statistics: LoadStatistics
        do {
            let presses = interrupts.count
            statistics = try await self.run(configuration) { generator in
                running.generator = generator
                // Ctrl-C during setup: the load stops as soon as it begins.
                if presses.value > 0 { generator.stop() }
                if interactive { progress.start(ProgressLine(generator: generator)) }
            }
        } catch {
            progress.stop()
            Self.complain("\(error)")
            guard let measured = error.statistics else { return error.phase == .configuration ? 2 : 1 }
            Self.report(measured, configuration: configuration, options: options, startedAt: startedAt)
            return 1
        }
        progress.stop()
        Self.report(statistics, configuration: configuration, options: options, startedAt: startedAt)
        if statistics.requests == 0 || statistics.stalled == true { return 1 }
        if parsed.strict, let script = statistics.script, !script.allPassed { return 1 }
        return 0
    }

    private static func report(_ statistics: LoadStatistics, configuration: LoadConfiguration, options: LoadOptions, startedAt: Double) {
        var report = LoadReport(configuration: configuration, statistics: statistics)
        report.startedAt = startedAt
        if options.json, let text = try? report.jsonText() {
            Swift.print(text)
        } else {
            Swift.print(report.text(latencyDistribution: options.latency))
        }
    }

    private static func complain(_ message: String) {
        FileHandle.standardError.write(Data("\(CommandLine.arguments.first.map { ($0 as NSString).lastPathComponent } ?? "workload"): \(message)\n".utf8))
    }
}

/// The run's generator, once it exists, for the Ctrl-C handler.
private final class LoadGeneratorBox: Sendable {
    private let stored = Mutex<LoadGenerator?>(nil)
    var generator: LoadGenerator? {
        get { self.stored.withLock { $0 } }
        set { self.stored.withLock { $0 = newValue } }
    }
}

/// The progress line, started when the load begins.
private final class ProgressBox: Sendable {
    private let line = Mutex<ProgressLine?>(nil)
    func start(_ line: ProgressLine) {
        self.line.withLock { $0 = line }
        line.start()
    }
    func stop() { self.line.withLock { $0 }?.stop() }
}
