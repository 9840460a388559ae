@_exported import SalvoTransport
import Dispatch
import HTTPTypes
import Synchronization

/// An HTTP/1.1 client: a keep-alive connection pool over epoll event loops.
///
/// Create one per process (or per configuration) and share it: it is `Sendable`, and its
/// pools are what make repeated requests fast. Shut it down when done; until then it keeps
/// threads and connections.
///
/// ```swift
/// let client = try HTTPClient()
/// defer { client.shutdown() }
/// let request = try HTTPRequest(method: .get, url: "http://127.0.0.1:8080/items")
/// let response = try await client.execute(request)
/// print(response.status, response.body.count)
/// ```
public final class HTTPClient: Sendable {
    public let configuration: Configuration
    let group: EventLoopGroup
    private let ownsGroup: Bool
    let pools: [LoopBound<PoolShard>]
    /// What the pools share: each host's connection budget, placement, lending.
    let coordinator: PoolCoordinator
    /// Per loop, the hook that ends this client's requests if the loop stops first (a shared
    /// group shut down before the client).
    private let stopHooks: [Int?]
    let tlsContexts: TLSContexts
    /// Prepares this client's requests (and their redirects' next requests) under its configuration.
    let preparer: RequestPreparer
    /// Whether this client (or the one it derives from) was shut down; shared with its
    /// preparer, so that a redirect's next request is refused once it is.
    let life: ClientLife
    /// For a derived client (``with(_:)``): the client whose loops and pools it uses, kept
    /// alive by it. Nil for a client with its own.
    let base: HTTPClient?
    /// Whether this is ``shared``, which lives as long as the process: ``shutdown()`` leaves it be.
    let isShared: Bool

    /// Whether requests are refused: this client, or the one it derives from, was shut down.
    var isShutDown: Bool { self.life.isStopped }

    /// Starts a client with its own event loops.
    public convenience init(configuration: Configuration = Configuration()) throws(TransportError) {
        try self.init(ownLoopsWith: configuration, isShared: false)
    }

    /// The process's shared client (``shared``): the default configuration, its own loops.
    convenience init(sharedWith configuration: Configuration) throws(TransportError) {
        try self.init(ownLoopsWith: configuration, isShared: true)
    }

    /// A client with loops of its own, made for it.
    private convenience init(ownLoopsWith configuration: Configuration, isShared: Bool) throws(TransportError) {
        try configuration.validate()
        let tls = try TLSContext(configuration.tls)
        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(numberOfThreads: configuration.threads)
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(.shutdown, detail: "\(error)")
        }
        self.init(configuration: configuration, group: group, ownsGroup: true, tls: tls, isShared: isShared)
    }

    /// A client on an existing group of loops (shared with other clients or code).
    public convenience init(configuration: Configuration = Configuration(), eventLoopGroup: EventLoopGroup) throws(TransportError) {
        try configuration.validate()
        let tls = try TLSContext(configuration.tls)
        self.init(configuration: configuration, group: eventLoopGroup, ownsGroup: false, tls: tls)
    }

    /// A derived client: `base`'s loops, pools and TLS, `configuration`'s request defaults.
    init(deriving base: HTTPClient, configuration: Configuration) {
        self.configuration = configuration
        self.group = base.group
        self.ownsGroup = false
        self.pools = base.pools
        self.coordinator = base.coordinator
        self.stopHooks = []
        self.tlsContexts = base.tlsContexts
        self.base = base
        self.isShared = false
        self.life = ClientLife(base: base.life)
        self.preparer = RequestPreparer(configuration: configuration, tlsContexts: base.tlsContexts, life: self.life)
    }

    private init(configuration: Configuration, group: EventLoopGroup, ownsGroup: Bool, tls: TLSContext, isShared: Bool = false) {
        self.base = nil
        self.isShared = isShared
        self.configuration = configuration
        self.group = group
        self.ownsGroup = ownsGroup
        self.tlsContexts = TLSContexts(primary: tls)
        self.life = ClientLife(base: nil)
        self.preparer = RequestPreparer(configuration: configuration, tlsContexts: self.tlsContexts, life: self.life)
        var poolConfiguration = PoolConfiguration(
            maxConnectionsPerHost: configuration.maxConnectionsPerHost,
            idleTimeout: configuration.idleTimeout,
            connectTimeout: configuration.connectTimeout,
            limits: configuration.headLimits,
            waitTimeout: configuration.poolWaitTimeout,
            resolver: HostResolver(configuration.nameResolution))
        poolConfiguration.pipeliningDepth = configuration.pipeliningDepth
        poolConfiguration.observer = configuration.observer
        poolConfiguration.http2 = configuration.http2
        let coordinator = PoolCoordinator(loops: group.loops, maxConnectionsPerHost: configuration.maxConnectionsPerHost)
        self.coordinator = coordinator
        self.pools = group.loops.map { loop in
            LoopBound(PoolShard(loop: loop, configuration: poolConfiguration, coordinator: coordinator), loop: loop)
        }
        coordinator.attach(self.pools)
        self.stopHooks = self.pools.map { bound in
            bound.loop.whenStopping {
                bound.value.shutdown(TransportError(.shutdown, detail: "the event loop stopped"))
            }
        }
    }

    deinit {
        // A client dropped without shutdown(): stop its pools and threads anyway. The last
        // reference can go away on one of its own loops (inside a callback); shutdown()
        // then finishes on another thread rather than wait for itself. Its work does not
        // capture self.
        self.shutdown()
    }

    private static func shutdownWork(pools: [LoopBound<PoolShard>], stopHooks: [Int?], group: EventLoopGroup?) -> @Sendable () -> Void {
        {
            let done = DispatchSemaphore(value: 0)
            var accepted = 0
            for (bound, hook) in zip(pools, stopHooks) {
                // The stop hook goes only once this work is on the loop: a loop that stops
                // first refuses the work and runs the hook, which does the same.
                let queued = bound.loop.tryExecute {
                    if let hook { bound.loop.removeStopHook(hook) }
                    bound.value.shutdown()
                    // The callers of the requests it failed are resumed before this returns.
                    bound.loop.runEndOfTurn(handingCallersToPool: false)
                    done.signal()
                }
                if queued { accepted += 1 }
            }
            for _ in 0..<accepted { done.wait() }
            group?.shutdown()
        }
    }

    // MARK: Shutting down

    /// Closes every connection, fails requests in flight with `.shutdown`, and (for a client
    /// that made its own loops) stops its threads. Idempotent. Does nothing to ``shared``,
    /// which other code in the process may be using.
    ///
    /// Blocks until all of that is done, except when called on one of the client's own loop
    /// threads (from a completion handler, say): a loop cannot wait for itself, so the
    /// shutdown then finishes in the background after this returns.
    public func shutdown() {
        guard !self.isShared else { return }
        guard self.life.stop() else { return }
        // A derived client only stops taking requests: the pools are its base's.
        guard self.base == nil else { return }
        let coordinator = self.coordinator
        defer { coordinator.detach() }
        let work = Self.shutdownWork(pools: self.pools, stopHooks: self.stopHooks, group: self.ownsGroup ? self.group : nil)
        if self.group.loops.contains(where: { $0.inEventLoop }) {
            DispatchQueue.global().async(execute: work)
        } else {
            work()
        }
    }

    /// The most connections to `key` that were open at once, all loops together, while the
    /// host has a pool (nil: it has none now). For tests of the per-host limit.
    func peakOpenConnections(to key: ConnectionKey) -> Int? {
        self.coordinator.peakOpenConnections(for: key)
    }

    /// Pool counters and gauges summed over the loops, in all and per host.
    ///
    /// ```swift
    /// let statistics = await client.poolStatistics()
    /// for (key, host) in statistics.hosts {
    ///     print(key, "open", host.open, "idle", host.idle, "queued", host.queued, "closed by server", host.closedByServer)
    /// }
    /// ```
    public func poolStatistics() async -> PoolStatistics {
        var total = PoolStatistics()
        for bound in self.pools {
            let part = await withUnsafeContinuation { (continuation: UnsafeContinuation<PoolStatistics, Never>) in
                let accepted = bound.loop.tryExecute {
                    let pool = bound.value
                    continuation.resume(returning: PoolStatistics(
                        connectionsOpened: pool.connectionsOpened, connectionsReused: pool.connectionsReused,
                        openConnections: pool.openConnectionCount, tlsResumed: pool.tlsResumed, hosts: pool.hostStatistics()))
                }
                if !accepted { continuation.resume(returning: PoolStatistics()) }
            }
            threadSanitizerSawResume()
            total.connectionsOpened += part.connectionsOpened
            total.connectionsReused += part.connectionsReused
            total.openConnections += part.openConnections
            total.tlsResumed += part.tlsResumed
            total.hosts.merge(part.hosts) { $0.adding($1) }
        }
        return total
    }
}

/// Whether a client was shut down, or the client it derives from: what every request it
/// prepares checks first (a redirect's next request included, prepared on a loop).
final class ClientLife: Sendable {
    private let stopped = Atomic<Bool>(false)
    /// A derived client's base's: shutting the base down stops both.
    private let base: ClientLife?

    init(base: ClientLife?) {
        self.base = base
    }

    var isStopped: Bool {
        self.stopped.load(ordering: .relaxed) || (self.base?.isStopped ?? false)
    }

    /// Stops this client; true the first time only.
    func stop() -> Bool {
        !self.stopped.exchange(true, ordering: .acquiringAndReleasing)
    }
}
