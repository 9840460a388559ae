import SalvoTransport
import HTTPTypes

/// Pool settings; see ``HTTPClient/Configuration``.
struct PoolConfiguration {
    var maxConnectionsPerHost: Int
    /// Requests one connection may carry at once (1: no pipelining).
    var pipeliningDepth = 1
    var idleTimeout: Duration
    var connectTimeout: Duration
    var limits: ResponseHeadLimits
    /// How long a request may wait for a connection when every one is busy.
    var waitTimeout: Duration
    /// The client's name resolution, shared by its loops.
    var resolver: HostResolver
    /// Who watches the engine, if anyone.
    var observer: (any EngineObserver)?
    /// What HTTP/2 connections tell servers, and their bounds.
    var http2 = HTTP2Settings()
}

/// The pools of one event loop (a shard): one ``HostPool`` per connection key. Loop-confined.
///
/// Each loop has its own shard, so no lock guards a pool: a request is placed on a loop and
/// stays there — unless it waits for a connection while another shard has one idle for the
/// same host, then it moves there. A host's connection limit is shared by the shards through
/// the ``PoolCoordinator``, which also carries the few messages between them.
/// Stored properties are `@exclusivity(unchecked)`: the object is touched by its loop's thread
/// only, and no access to a property spans a call that could reach it again, so Swift's
/// dynamic exclusivity checks (12% of the API path's user CPU) buy nothing here.
final class PoolShard {
    unowned let loop: EventLoop
    let configuration: PoolConfiguration
    let coordinator: PoolCoordinator
    @exclusivity(unchecked) private var hosts: [ConnectionKey: HostPool] = [:]
    /// The host pool the last request went to, while it is in ``hosts``: most requests go
    /// where the one before went, and find it by comparing keys instead of hashing one.
    @exclusivity(unchecked) private var lastHost: HostPool? {
        didSet { self.lastShape = nil }
    }
    /// The shape of the prepared call whose requests went to ``lastHost`` last, while it
    /// does: the next request of the same shape goes there too. Only shapes a prepared call
    /// shares are kept (``RequestShape/isShared``): they live as long as the call anyway.
    @exclusivity(unchecked) private var lastShape: RequestShape?
    @exclusivity(unchecked) private(set) var isShutdown = false
    @exclusivity(unchecked) var nextConnectionID = 1
    @exclusivity(unchecked) var nextWaiterID = 1
    /// Counters for reports: connections opened, requests that reused a connection.
    @exclusivity(unchecked) var connectionsOpened = 0
    /// Requests that reused a connection: each host pool counts its own (no call to the
    /// owner per request); the pools dropped since leave theirs here.
    var connectionsReused: Int { self.hosts.values.reduce(self.reusedByDroppedPools) { $0 + $1.counters.reused } }
    @exclusivity(unchecked) private var reusedByDroppedPools = 0
    /// TLS handshakes that resumed an earlier session.
    @exclusivity(unchecked) var tlsResumed = 0
    /// Per host: the counters of host pools dropped since (a pool goes when empty), so that
    /// they outlive it. Live pools count in their own fields: no lookup per request.
    @exclusivity(unchecked) var hostCounters: [ConnectionKey: HostPoolStatistics] = [:]
    /// At most this many hosts' past counters are kept; past it they start again.
    static let maxCountedHosts = 4096

    /// Counters and gauges per host, on this loop.
    func hostStatistics() -> [ConnectionKey: HostPoolStatistics] {
        var result = self.hostCounters
        for (key, pool) in self.hosts {
            var entry = result[key, default: HostPoolStatistics()].adding(pool.counters)
            let gauges = pool.gauges
            entry.open = gauges.open
            entry.idle = gauges.idle
            entry.leased = gauges.leased
            entry.connecting = gauges.connecting
            entry.queued = gauges.queued
            entry.http2Connections = gauges.http2
            entry.openStreams = gauges.streams
            result[key] = entry
        }
        return result
    }
    /// Resumable TLS sessions by host, for new connections (see HostPool.tlsResumption).
    @exclusivity(unchecked) var tlsResumptions: [ConnectionKey: TLSResumption] = [:]
    /// The observer's host observers, asked for once per host on this loop and kept (a
    /// bounded number), so that their handles outlive the host pools that come and go.
    @exclusivity(unchecked) private var hostObservers: [ConnectionKey: any HostObserver] = [:]

    /// The observer of `key`'s events on this loop; nil when nobody watches.
    func hostObserver(for key: ConnectionKey) -> (any HostObserver)? {
        guard let observer = self.configuration.observer else { return nil }
        if let known = self.hostObservers[key] { return known }
        if self.hostObservers.count >= 1024 { self.hostObservers.removeAll(keepingCapacity: true) }
        let made = observer.hostObserver(scheme: key.scheme.rawValue, host: key.host, port: key.port)
        self.hostObservers[key] = made
        return made
    }

    init(loop: EventLoop, configuration: PoolConfiguration, coordinator: PoolCoordinator) {
        self.loop = loop
        self.configuration = configuration
        self.coordinator = coordinator
    }

    /// This shard's position among the client's loops.
    var index: Int { self.loop.index }

    /// Takes a request that was moving to this shard (or back, when the move failed);
    /// `urgent`: it goes first in the queue.
    func adopt(_ owner: RequestOwner, movable: Bool, urgent: Bool) {
        if owner.arrived(in: self) {
            // Cancelled on its way: the cancellation found nothing to stop then.
            owner.fail(.cancelled(.caller, phase: .request))
            return
        }
        self.submit(owner, fresh: owner.wait.wantsFreshConnection, movable: movable, urgent: urgent)
    }

    /// Queues `owner`'s request for a connection to its host. `fresh`: a new connection, not
    /// an idle one; `movable`: it may go on to another shard that has an idle connection (not
    /// when it just failed to); `urgent`: first in the queue.
    func submit(_ owner: RequestOwner, fresh: Bool = false, movable: Bool = true, urgent: Bool = false) {
        if owner.isFinished { return }
        if self.isShutdown {
            owner.fail(TransportError(.shutdown, phase: .pool))
            return
        }
        let pool: HostPool
        if let last = self.lastHost, owner.prepared.shape === self.lastShape || last.key == owner.key {
            // Most requests go to the host the last one went to: found without hashing it,
            // and a prepared call's without comparing keys either (comparing copies both).
            pool = last
        } else if let existing = self.hosts[owner.key] {
            pool = existing
            self.lastHost = existing
        } else {
            pool = HostPool(key: owner.key, tls: owner.tls, owner: self, budget: self.coordinator.takeBudget(for: owner.key))
            self.hosts[owner.key] = pool
            self.lastHost = pool
        }
        if owner.prepared.shape.isShared, owner.prepared.shape !== self.lastShape { self.lastShape = owner.prepared.shape }
        pool.submit(owner, fresh: fresh, movable: movable, urgent: urgent)
    }

    /// The caller cancelled `owner`'s request: it leaves the queue, its line or its connection.
    func cancel(_ owner: RequestOwner, error: TransportError) {
        switch owner.placement {
        case .queued:
            self.hosts[owner.key]?.removeWaiter(owner, error: error)
        case .running(let carrier):
            carrier.fail(error)
        case .inLine(let carrier):
            carrier.cancelWaiting(owner, error: error)
        case .none, .moving, .finished:
            // A moving request is failed when it arrives (see adopt); one between attempts is
            // never seen here (it is resubmitted within the turn that ended its attempt).
            break
        }
    }

    /// A call for `key` failed on this loop: counted in the host's statistics (in its pool's
    /// counters, or in those kept for it after its pool went).
    func countFailure(of key: ConnectionKey) {
        if let pool = self.hosts[key] {
            pool.counters.requestsFailed += 1
        } else if self.hostCounters[key] != nil {
            self.hostCounters[key]?.requestsFailed += 1
        }
    }

    /// Shard `requester` has an idle connection to `key` that nobody there waits for: send it
    /// this shard's oldest waiting request for that host, if one still waits.
    func sendWaiter(_ key: ConnectionKey, to requester: Int) {
        self.hosts[key]?.sendWaiter(to: requester)
    }

    /// `key`'s budget has room again: requests waiting here may connect.
    func capacityAvailable(_ key: ConnectionKey) {
        self.hosts[key]?.capacityAvailable()
    }

    /// Closes every connection and fails every request with `error`, on this loop.
    func shutdown(_ error: TransportError = TransportError(.shutdown)) {
        self.isShutdown = true
        for pool in self.hosts.values { pool.shutdown(error) }
        self.tlsResumptions.removeAll()
    }

    func dropIfEmpty(_ pool: HostPool) {
        if pool.isEmpty, self.hosts[pool.key] === pool {
            self.hosts[pool.key] = nil
            if self.lastHost === pool { self.lastHost = nil }
            if self.hostCounters[pool.key] == nil, self.hostCounters.count >= Self.maxCountedHosts {
                self.hostCounters.removeAll(keepingCapacity: true)
            }
            self.hostCounters[pool.key, default: HostPoolStatistics()] = self.hostCounters[pool.key, default: HostPoolStatistics()].adding(pool.counters)
            self.reusedByDroppedPools += pool.counters.reused
            pool.detach()
        }
    }

    var openConnectionCount: Int { self.hosts.values.reduce(0) { $0 + $1.connections.count + $1.multiplexed.count } }
}
