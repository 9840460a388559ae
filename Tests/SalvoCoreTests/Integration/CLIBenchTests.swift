import SalvoTestSupport
import Foundation
import Testing

/// `salvo bench` and `salvo merge` run as a user runs them: reports in text and JSON, runs
/// started together and merged into their sum, bad arguments, Ctrl-C printing what it has.
@Suite struct CLIBenchTests {
    @Test func benchJSONAndText() async throws {
        let nginx = try await Shared.nginx.get()
        let json = try await CLITests.run(CLITests.salvoPath, ["bench", "-c4", "-t2", "-n", "300", "--json", nginx.url("/small")])
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        let summary = object?["summary"] as? [String: Any]
        #expect(summary?["requests"] as? Int == 300)
        #expect((summary?["status_counts"] as? [String: Int])?["200"] == 300)
        #expect((summary?["latency_us"] as? [String: Double])?["p99"] != nil)
        #expect(object?["report"] != nil, "the mergeable report with its histogram")

        let text = try await CLITests.run(CLITests.salvoPath, ["bench", "-c", "2", "-t", "1", "-d", "300ms", "--latency", nginx.url("/small")])
        #expect(text.status == 0)
        let output = String(decoding: text.stdout, as: UTF8.self)
        #expect(output.hasPrefix("Running 300ms test @ "))
        #expect(output.contains("Latency Distribution"))
        #expect(output.contains("Requests/sec:"))
        #expect(!output.contains("\r"), "no progress line when stdout is not a terminal")

        let refused = try await CLITests.run(CLITests.salvoPath, ["bench", "-c1", "-t1", "-d", "200ms", "http://127.0.0.1:\(try freePort())/"])
        #expect(refused.status == 1)
        #expect(String(decoding: refused.stdout, as: UTF8.self).contains("Socket errors: connect"))

        let bad = try await CLITests.run(CLITests.salvoPath, ["bench", "-c1", "-t4", "http://127.0.0.1:1/"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("connections"))
    }

    /// Distributed load, simulated: N runs told to start at the same time overlap, and their
    /// merged report is the sum of its parts — counts exactly, duration the span they cover,
    /// percentiles from the merged histogram (so between the parts' own).
    @Test func runsStartTogetherAndMergeIntoTheirSum() async throws {
        let nginx = try await Shared.nginx.get()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-start-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Far enough ahead that three processes are up and waiting on a loaded 2-core machine
        // (2.5 s was not always: a run that launches after the time begins at once, late).
        let start = Date().timeIntervalSince1970 + 8
        let arguments = ["bench", "-c2", "-t1", "-d", "800ms", "--json", "--start-at", String(format: "%.3f", start), nginx.url("/small")]
        let runs = try await withThrowingTaskGroup(of: CLITests.Run.self) { group in
            for _ in 0..<3 { group.addTask { try await CLITests.run(CLITests.salvoPath, arguments) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        var files: [String] = []
        var parts: [(requests: Int, ok: Int, startedAt: Double, duration: Double, p50: Double, p99: Double)] = []
        for (index, run) in runs.enumerated() {
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
            let summary = try #require(object["summary"] as? [String: Any])
            let report = try #require(object["report"] as? [String: Any])
            let latency = try #require(summary["latency_us"] as? [String: Double])
            parts.append((summary["requests"] as? Int ?? 0, (summary["status_counts"] as? [String: Int])?["200"] ?? 0,
                          report["startedAt"] as? Double ?? 0, summary["duration_seconds"] as? Double ?? 0,
                          latency["p50"] ?? 0, latency["p99"] ?? 0))
            let file = directory.appendingPathComponent("\(index).json").path
            try run.stdout.write(to: URL(fileURLWithPath: file))
            files.append(file)
        }
        for part in parts {
            #expect(abs(part.startedAt - start) < 0.5, "started at \(part.startedAt), asked \(start)")
            #expect(part.requests > 0)
        }
        let merged = try await CLITests.run(CLITests.salvoPath, ["merge", "--json"] + files)
        #expect(merged.status == 0, "\(merged.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: merged.stdout) as? [String: Any])
        let summary = try #require(object["summary"] as? [String: Any])
        #expect(summary["requests"] as? Int == parts.map(\.requests).reduce(0, +))
        #expect((summary["status_counts"] as? [String: Int])?["200"] == parts.map(\.ok).reduce(0, +))
        let span = parts.map { $0.startedAt + $0.duration }.max()! - parts.map(\.startedAt).min()!
        let duration = try #require(summary["duration_seconds"] as? Double)
        #expect(abs(duration - span) < 0.001, "the merged run spans \(span) s, says \(duration)")
        let latency = try #require(summary["latency_us"] as? [String: Double])
        for (key, values) in [("p50", parts.map(\.p50)), ("p99", parts.map(\.p99))] {
            let value = try #require(latency[key])
            #expect(value >= values.min()! && value <= values.max()!, "\(key) \(value) outside the parts' \(values)")
        }

        let bad = try await CLITests.run(CLITests.salvoPath, ["bench", "-c1", "-t1", "-d", "100ms", "--start-at", "tomorrow", nginx.url("/small")])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--start-at"))
        let tooFar = try await CLITests.run(CLITests.salvoPath, ["bench", "-c1", "-t1", "--start-at", String(Date().timeIntervalSince1970 + 90_000), nginx.url("/small")])
        #expect(tooFar.status != 0)
        let absurd = try await CLITests.run(CLITests.salvoPath, ["bench", "-c1", "-t1", "--start-at", "1e300", nginx.url("/small")])
        #expect(absurd.status != 0)
        #expect(absurd.stderr.contains("a day at the most"), "refused, not crashed: \(absurd.stderr)")
    }

    @Test func benchReportsMergeAndCtrlCPrintsWhatItHas() async throws {
        let nginx = try await Shared.nginx.get()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-merge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var files: [String] = []
        for (i, count) in [300, 500].enumerated() {
            let run = try await CLITests.run(CLITests.salvoPath, ["bench", "-c2", "-t1", "-n", "\(count)", "--json", nginx.url("/small")])
            let file = directory.appendingPathComponent("\(i).json").path
            try run.stdout.write(to: URL(fileURLWithPath: file))
            files.append(file)
        }
        let merged = try await CLITests.run(CLITests.salvoPath, ["merge", "--json"] + files)
        #expect(merged.status == 0, "\(merged.stderr)")
        let object = try JSONSerialization.jsonObject(with: merged.stdout) as? [String: Any]
        #expect((object?["summary"] as? [String: Any])?["requests"] as? Int == 800)

        // Ctrl-C: the run stops at once and still prints its report.
        let started = Date()
        let (status, text) = try await offThePool { () throws -> (Int32, String) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLITests.salvoPath)
            process.arguments = ["bench", "-c2", "-t1", "-d", "60s", nginx.url("/small")]
            process.standardError = FileHandle.nullDevice
            let out = try launching { () throws -> Pipe in
                let out = Pipe()
                process.standardOutput = out
                try process.run()
                return out
            }
            // Until it handles Ctrl-C: it ignores SIGINT (read from /proc) just before it
            // starts listening for it; a moment more for that.
            let deadline = Date().addingTimeInterval(20)
            while !Self.ignoresInterrupts(process.processIdentifier), Date() < deadline, process.isRunning {
                Thread.sleep(forTimeInterval: 0.02)
            }
            Thread.sleep(forTimeInterval: 0.3)
            process.interrupt()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, text)
        }
        #expect(Date().timeIntervalSince(started) < 30, "a 60 s run stopped by Ctrl-C")
        #expect(status == 0)
        #expect(text.contains("Requests/sec:"))
    }

    /// Whether process `pid` ignores SIGINT: the `SigIgn` mask of /proc/PID/status.
    static func ignoresInterrupts(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigIgn:") }),
              let mask = UInt64(line.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << (UInt64(SIGINT) - 1)) != 0
    }
}
