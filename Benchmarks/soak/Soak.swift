// soak: a long, steady load through the engine and then through the typed layer, with the
// process's resident memory and open descriptors sampled as it goes. After a warm-up (the
// first fifth of each phase: pools filled, caches and allocator arenas grown), both must stay
// flat: no sample's resident memory more than 5% above the first one's after the warm-up, and
// no more than one descriptor more. Run by `make soak`
// (scripts/soak), which starts a private nginx and serves the typed phase's document.
//
//   soak --url BASE --engine-requests N --typed-requests M --concurrency C
//
// Prints each phase's samples and a verdict; exits 1 if a phase drifted or any request failed.
import Foundation
import Salvo
import SalvoCore
import Synchronization

/// The document the typed phase decodes (scripts/soak writes it).
struct Profile: Decodable, Sendable {
    var id: Int
    var name: String
    var tags: [String]
    var scores: [Double]
}

/// One look at the process.
struct Sample: Sendable {
    var requests: Int
    var residentBytes: Int
    var descriptors: Int

    static func take(after requests: Int) -> Sample {
        Sample(requests: requests, residentBytes: residentBytes(), descriptors: openDescriptors())
    }

    /// Resident set size, from /proc/self/statm (pages).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }
}

struct Options {
    var url = ""
    var engineRequests = 1_000_000
    var typedRequests = 100_000
    var concurrency = 32

    static let usage = "usage: soak --url BASE --engine-requests N --typed-requests M --concurrency C"

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("soak: \(message)\n\(usage)\n".utf8))
            exit(2)
        }
        func number(for flag: String) -> Int {
            guard let text = rest.popFirst(), let value = Int(text), value >= 0 else { fail("\(flag) needs a whole number") }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--url":
                guard let url = rest.popFirst() else { fail("--url needs a value") }
                options.url = url
            case "--engine-requests": options.engineRequests = number(for: flag)
            case "--typed-requests": options.typedRequests = number(for: flag)
            case "--concurrency", "-c": options.concurrency = max(1, number(for: flag))
            default: fail("unknown option \(flag)")
            }
        }
        if options.url.isEmpty { fail("--url is required") }
        return options
    }
}

/// The next call to make, and the calls that failed, shared by a phase's tasks.
final class Counts: Sendable {
    let next = Atomic(0)
    let failures = Atomic(0)
    let samples = Mutex<[Sample]>([])
}

/// Runs `total` calls of `call`, `concurrency` at a time, sampling the process fifty times.
func phase(_ name: String, total: Int, concurrency: Int, _ call: @escaping @Sendable () async -> Bool) async -> (samples: [Sample], failures: Int, seconds: Double) {
    let counts = Counts()
    counts.samples.withLock { $0.append(Sample.take(after: 0)) }
    let every = max(1, total / 50)
    let started = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<concurrency {
            group.addTask {
                while true {
                    let index = counts.next.add(1, ordering: .relaxed).oldValue
                    guard index < total else { return }
                    if await !call() { counts.failures.add(1, ordering: .relaxed) }
                    if (index + 1) % every == 0 {
                        let sample = Sample.take(after: index + 1)
                        counts.samples.withLock { $0.append(sample) }
                    }
                }
            }
        }
    }
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (counts.samples.withLock { $0.sorted { $0.requests < $1.requests } }, counts.failures.load(ordering: .relaxed), seconds)
}

/// Prints a phase's figures; true when it held flat after the warm-up and nothing failed.
func report(_ name: String, total: Int, _ result: (samples: [Sample], failures: Int, seconds: Double)) -> Bool {
    let samples = result.samples
    let warm = samples.filter { $0.requests >= total / 5 }
    guard let first = warm.first else {
        print("\(name): too few samples")
        return false
    }
    let peakResident = warm.map(\.residentBytes).max()!
    let peakDescriptors = warm.map(\.descriptors).max()!
    let residentDrift = Double(peakResident - first.residentBytes) / Double(first.residentBytes)
    func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
    print("\(name): \(total) requests in \(String(format: "%.1f", result.seconds)) s (\(Int(Double(total) / result.seconds)) req/s), \(result.failures) failed")
    print("  after warm-up (\(first.requests) requests): resident \(mib(first.residentBytes)) → peak \(mib(peakResident)) (\(String(format: "%+.1f%%", residentDrift * 100))), descriptors \(first.descriptors) → peak \(peakDescriptors)")
    print("  samples (requests: resident, descriptors): " + samples.enumerated().filter { $0.offset % 5 == 0 || $0.offset == samples.count - 1 }
        .map { "\($0.element.requests): \(mib($0.element.residentBytes)), \($0.element.descriptors)" }.joined(separator: "; "))
    // Descriptors exactly: one more is a connection opening as another closes, two a leak.
    let flat = residentDrift <= 0.05 && peakDescriptors <= first.descriptors + 1
    print("  \(flat && result.failures == 0 ? "flat" : "NOT FLAT or failed")")
    return flat && result.failures == 0
}

@main
struct Soak {
    static func main() async throws {
        let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = options.concurrency
        let engine = try HTTPClient(configuration: configuration)
        defer { engine.shutdown() }

        let small = try HTTPRequest(method: .get, url: options.url + "/small")
        let engineResult = await phase("engine", total: options.engineRequests, concurrency: options.concurrency) {
            guard let response = try? await engine.execute(small) else { return false }
            return response.status == .ok && !response.body.isEmpty
        }
        var held = report("engine (HTTPClient.execute, GET /small)", total: options.engineRequests, engineResult)

        let typed = try Client(baseURL: options.url, transport: engine)
        let endpoint = Endpoint<Profile>.get("/dav/profile.json")
        let typedResult = await phase("typed", total: options.typedRequests, concurrency: options.concurrency) {
            guard let profile = try? await typed.value(endpoint) else { return false }
            return profile.id == 42 && profile.tags.count == 3
        }
        held = report("typed (Client.value, GET /dav/profile.json decoded)", total: options.typedRequests, typedResult) && held
        exit(held ? 0 : 1)
    }
}
