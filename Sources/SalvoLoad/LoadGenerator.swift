import Dispatch
import SalvoCore
import Synchronization

/// A wrk-class load generator on Salvo's event loops.
///
/// Each thread runs an event loop with its share of the connections; requests are
/// serialized once and every response is timed into a per-thread HdrHistogram, merged at
/// the end. Bounded by a duration and/or a request count, and stoppable early.
///
/// ```swift
/// var configuration = LoadConfiguration(url: try RequestURL("http://127.0.0.1:8080/"))
/// configuration.connections = 64
/// configuration.duration = .seconds(10)
/// let statistics = try await LoadGenerator(configuration: configuration).run()
/// print(statistics.requestsPerSecond)
/// ```
public final class LoadGenerator: Sendable {
    public let configuration: LoadConfiguration
    private let live: [LiveCounters]
    private let stopRequested = Atomic<Bool>(false)
    private let running = Mutex<[LoopBoundWorkerHandle]>([])
    /// A scripted run's workload (``Workload``), which builds each request instead of the
    /// configuration's one.
    private let script: ScriptPlan?

    public convenience init(configuration: LoadConfiguration) throws(TransportError) {
        try self.init(configuration: configuration, script: nil)
    }

    init(configuration: LoadConfiguration, script: ScriptPlan?) throws(TransportError) {
        try configuration.validate()
        self.configuration = configuration
        self.script = script
        self.live = (0..<configuration.threads).map { _ in LiveCounters() }
    }

    /// Requests and errors so far, for a progress display; safe from any thread.
    public func progress() -> (requests: Int, errors: Int) {
        self.live.reduce((0, 0)) { total, counters in
            (total.0 + counters.requests.load(ordering: .relaxed), total.1 + counters.errors.load(ordering: .relaxed))
        }
    }

    /// Ends the run early (Ctrl-C): `run()` returns what was measured so far.
    public func stop() {
        self.stopRequested.store(true, ordering: .sequentiallyConsistent)
        let handles = self.running.withLock { $0 }
        for handle in handles { handle.stop() }
    }

    /// Runs the load and returns the merged statistics.
    public func run() async throws(TransportError) -> LoadStatistics {
        let configuration = self.configuration
        let request = try configuration.requestBytes()
        let http2 = configuration.http2 ? try configuration.http2Block() : nil
        let addresses: [SocketAddress]
        if let path = configuration.unixSocketPath {
            guard let address = SocketAddress(unixPath: path) else {
                throw TransportError(.invalidConfiguration, detail: "Unix socket path \"\(path)\" is empty, too long or holds a NUL")
            }
            addresses = [address]
        } else if let proxy = configuration.proxy {
            addresses = try Resolver.lookup(host: proxy.host, port: proxy.port).mapError { proxy.nameFailure($0) }.get()
        } else {
            addresses = try Resolver.lookup(host: configuration.url.host, port: configuration.url.port).get()
        }
        let tls = configuration.url.scheme == .https ? try TLSContext(configuration.tls) : nil
        // Now, not in the first connection's handshake on a worker loop, inside the measured run.
        tls?.loadDeferredTrust()
        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(numberOfThreads: configuration.threads, name: "salvo-bench")
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(.invalidConfiguration, detail: "\(error)")
        }
        defer { group.shutdown() }

        let threads = configuration.threads
        let results = Mutex<[LoadStatistics]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let remaining = Atomic<Int>(threads)
            var handles: [LoopBoundWorkerHandle] = []
            var firstUser = 0
            let script = self.script
            for (index, loop) in group.loops.enumerated() {
                let connections = configuration.connections / threads + (index < configuration.connections % threads ? 1 : 0)
                let users = firstUser
                firstUser += connections
                let budget = configuration.requestLimit.map { $0 / threads + (index < $0 % threads ? 1 : 0) }
                let live = self.live[index]
                let handle = LoopBoundWorkerHandle(loop: loop)
                handles.append(handle)
                loop.execute {
                    let worker = LoadWorker(
                        loop: loop, address: addresses[0], request: request, configuration: configuration,
                        connections: connections, budget: budget, live: live, tls: tls, http2: http2,
                        script: script, firstUser: users
                    ) { statistics in
                        results.withLock { $0.append(statistics) }
                        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                            done.resume()
                        }
                    }
                    handle.attach(worker)
                    worker.start()
                }
            }
            self.running.withLock { $0 = handles }
            if self.stopRequested.load(ordering: .sequentiallyConsistent) {
                for handle in handles { handle.stop() }
            }
        }
        threadSanitizerSawResume()
        self.running.withLock { $0 = [] }
        var total = LoadStatistics()
        for part in results.withLock({ $0 }) { total.add(part) }
        return total
    }
}

/// Lets another thread ask a worker to stop.
/// @unchecked Sendable: `worker` is set and read only on `loop`'s thread.
final class LoopBoundWorkerHandle: @unchecked Sendable {
    let loop: EventLoop
    private var worker: LoadWorker?

    init(loop: EventLoop) { self.loop = loop }

    func attach(_ worker: LoadWorker) { self.worker = worker }

    func stop() {
        self.loop.execute { self.worker?.stop(); self.worker = nil }
    }
}
