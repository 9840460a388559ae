import Benchmark
import Foundation
import SalvoCore
import SalvoLoad

/// A private nginx from the test fixtures, for the load generator's allocation count.
final class BenchmarkNginx: @unchecked Sendable {
    // @unchecked Sendable: set once in start(), read afterwards.
    var port = 0
    var process: Process?
    var pid: Int32 = 0

    func start() throws {
        let fixtures = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Fixtures/start-nginx.sh")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-microbench-\(getpid())")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [fixtures.path, directory.path, "--lifetime", "600"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        self.process = process
        var text = ""
        while !(text.contains("PID ")) {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == "PORT" { self.port = Int(parts[1]) ?? 0 }
            if parts.count == 2, parts[0] == "PID" { self.pid = Int32(parts[1]) ?? 0 }
        }
    }

    func stop() {
        if self.pid > 0 { kill(self.pid, SIGTERM) }
        self.process?.waitUntilExit()
    }
}

let loadBenchmarks: @Sendable () -> Void = {
    let nginx = BenchmarkNginx()

    /// A closed-loop run of `requests` requests over 8 connections on one thread.
    @Sendable func closedLoop(_ requests: Int) throws -> LoadConfiguration {
        var configuration = LoadConfiguration(url: try RequestURL("http://127.0.0.1:\(nginx.port)/small"))
        configuration.threads = 1
        configuration.connections = 8
        configuration.duration = .zero
        configuration.requestLimit = requests
        return configuration
    }

    func measured(_ teardown: Benchmark.BenchmarkTeardownHook? = nil) -> Benchmark.Configuration {
        .init(metrics: [.wallClock, .mallocCountTotal, .throughput], scalingFactor: .one, maxDuration: .seconds(5),
              maxIterations: 5, setup: { if nginx.port == 0 { try nginx.start() } }, teardown: teardown)
    }

    // The same run at two sizes: the difference in allocations between them, divided by the
    // difference in requests, is what one request costs in steady state (zero is the goal).
    for requests in [2_000, 20_000] {
        Benchmark("LoadGenerator closed loop, \(requests) requests, 8 connections", configuration: measured()) { benchmark in
            let statistics = try await LoadGenerator(configuration: try closedLoop(requests)).run()
            precondition(statistics.requests == requests, "\(statistics.requests) of \(requests)")
            blackHole(statistics)
        }
    }

    // The same closed loop through HTTPClient's public APIs: allocations per request are the
    // difference between the two sizes divided by 18,000.
    for api in [ClientAPI.callbacks, .async] {
        for requests in [2_000, 20_000] {
            // The last benchmark stops the server (which also ends by itself after 600 s).
            let teardown: Benchmark.BenchmarkTeardownHook? = api == .async && requests == 20_000 ? { nginx.stop() } : nil
            Benchmark("HTTPClient \(api.rawValue) API, \(requests) requests, 8 connections", configuration: measured(teardown)) { benchmark in
                let statistics = try await ClientLoad(configuration: try closedLoop(requests), api: api).run()
                precondition(statistics.requests == requests, "\(statistics.requests) of \(requests)")
                blackHole(statistics)
            }
        }
    }
}
