import Foundation
import Salvo
import SalvoCore

/// `--mode cache`: the CPU a call costs when it goes to the server, and when a memory or a
/// disk cache answers it with a fresh copy, each measured over the same number of seconds.
enum CacheCost {
    static func run(engine: HTTPClient, base: String, path: String, url: String, seconds: Double) async throws {
        let endpoint = Endpoint<Void>.get(path)
        let network = try Client(baseURL: BaseURL(base), transport: engine)
        let document = try await network.send(endpoint).body
        let fresh: HTTPFields = [.contentType: "application/json", .cacheControl: "max-age=86400"]

        let memory = HTTPCache(store: MemoryCacheStore())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typed-load-cache-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = HTTPCache(store: try DiskCacheStore(directory: directory, capacity: 64 << 20))
        for cache in [memory, disk] {
            guard await cache.store(document, headerFields: fresh, for: url) else {
                throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "the cache did not take the document"])
            }
        }
        // The floor: the same calls answered at once by an in-process transport behind one
        // middleware that passes them on (what any answer made inside the client costs).
        let floor = try Client(baseURL: BaseURL(base), transport: Canned(document: document), configuration: .init(middleware: [PassOn()]))
        let bare = try Client(baseURL: BaseURL(base), transport: Canned(document: document))
        let clients = [
            ("bare", bare),
            ("floor", floor),
            ("network", network),
            ("memory", try Client(baseURL: BaseURL(base), transport: engine, configuration: .init(cache: memory))),
            ("disk", try Client(baseURL: BaseURL(base), transport: engine, configuration: .init(cache: disk))),
        ]
        var costs: [String: Double] = [:]
        // CACHE_ONLY=memory (or disk, network): that client alone, for a profiler.
        let only = ProcessInfo.processInfo.environment["CACHE_ONLY"]
        for (name, client) in clients where only == nil || only == name {
            // A warm-up, then the measured calls. The disk store lists a key's directory again
            // on every lookup for a second after it last changed (a change within one clock
            // tick would not show): its warm-up waits that second out, as any entry stored
            // longer ago than that is read.
            let hits = name == "memory" || name == "disk"
            _ = try await self.measure(client, endpoint, seconds: name == "disk" ? 1.2 : 0.5, expectHit: hits)
            costs[name] = try await self.measure(client, endpoint, seconds: seconds / 3, expectHit: hits)
        }
        let network_ = costs["network"] ?? 1
        print("{\"bare_cpu_ns\":\(Int(costs["bare"] ?? 0)),\"floor_cpu_ns\":\(Int(costs["floor"] ?? 0)),\"network_cpu_ns\":\(Int(network_)),\"memory_cpu_ns\":\(Int(costs["memory"] ?? 0)),\"disk_cpu_ns\":\(Int(costs["disk"] ?? 0)),"
            + "\"memory_ratio\":\(String(format: "%.4f", (costs["memory"] ?? 0) / network_)),"
            + "\"disk_ratio\":\(String(format: "%.4f", (costs["disk"] ?? 0) / network_)),\"bytes\":\(document.count)}")
    }

    /// CPU nanoseconds (user + sys, all threads) per call, one call after another.
    static func measure(_ client: Client, _ endpoint: Endpoint<Void>, seconds: Double, expectHit: Bool) async throws -> Double {
        let deadline = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
        let start = self.cpuNanoseconds()
        var calls = 0
        while ContinuousClock.now < deadline {
            for _ in 0..<50 {
                let response = try await client.send(endpoint)
                if expectHit && response.cacheStatus != .hit {
                    throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "not a hit: \(String(describing: response.cacheStatus))"])
                }
            }
            calls += 50
        }
        return Double(self.cpuNanoseconds() - start) / Double(calls)
    }

    static func cpuNanoseconds() -> Int64 {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func ns(_ time: timeval) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_usec) * 1000 }
        return ns(usage.ru_utime) + ns(usage.ru_stime)
    }
}
