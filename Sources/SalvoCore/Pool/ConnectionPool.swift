import HTTPTypes

/// Pool settings; see ``HTTPClient/Configuration``.
struct PoolConfiguration {
    var maxConnectionsPerHost: Int
    var idleTimeout: Duration
    var connectTimeout: Duration
    var limits: ResponseHeadLimits
    /// How long a request may wait for a connection when every one is busy.
    var waitTimeout: Duration
}

/// The pools of one event loop: one ``HostPool`` per connection key. Loop-confined.
///
/// Each loop has its own shard, so no lock guards a pool: a request is placed on a loop
/// and stays there. The per-host connection limit is split across the loops.
final class ConnectionPool {
    unowned let loop: EventLoop
    let configuration: PoolConfiguration
    let loopShare: Int
    private var hosts: [ConnectionKey: HostPool] = [:]
    private(set) var isShutdown = false
    var nextConnectionID = 1
    var nextWaiterID = 1
    /// Counters for reports: connections opened, requests that reused a connection.
    var connectionsOpened = 0
    var connectionsReused = 0
    /// TLS handshakes that resumed an earlier session.
    var tlsResumed = 0
    /// Resumable TLS sessions by host, for new connections (see HostPool.tlsResumption).
    var tlsResumptions: [ConnectionKey: TLSResumption] = [:]

    init(loop: EventLoop, configuration: PoolConfiguration, maxConnectionsOnThisLoop: Int) {
        self.loop = loop
        self.configuration = configuration
        self.loopShare = maxConnectionsOnThisLoop
    }

    func submit(_ task: RequestTask) {
        if self.isShutdown {
            task.fail(HTTPClientError(.shutdown, phase: .pool))
            return
        }
        let pool: HostPool
        if let existing = self.hosts[task.key] {
            pool = existing
        } else {
            pool = HostPool(key: task.key, tls: task.tls, owner: self)
            self.hosts[task.key] = pool
        }
        pool.submit(task, fresh: false)
    }

    func cancel(_ task: RequestTask, error: HTTPClientError) {
        switch task.phase {
        case .queued:
            self.hosts[task.key]?.removeWaiter(task, error: error)
        case .running(let connection):
            connection.fail(error)
        case .finished:
            break
        }
    }

    /// Closes every connection and fails every request with `error`, on this loop.
    func shutdown(_ error: HTTPClientError = HTTPClientError(.shutdown)) {
        self.isShutdown = true
        for pool in self.hosts.values { pool.shutdown(error) }
        self.tlsResumptions.removeAll()
    }

    func dropIfEmpty(_ pool: HostPool) {
        if pool.isEmpty, self.hosts[pool.key] === pool {
            self.hosts[pool.key] = nil
            pool.detached = true
        }
    }

    var openConnectionCount: Int { self.hosts.values.reduce(0) { $0 + $1.connections.count } }
}

/// The pool for one key on one loop: ``PoolStateMachine`` plus the objects its ids stand for.
final class HostPool: TimerTarget {
    let key: ConnectionKey
    /// The TLS context of an https key: every task with this key carries the same one.
    let tls: TLSContext?
    unowned let owner: ConnectionPool
    private var machine: PoolStateMachine
    private(set) var connections: [Int: HTTP1Connection] = [:]
    private var waiters: [Int: RequestTask] = [:]
    /// The last resumable TLS session of this host, offered to its new connections. Kept by
    /// the loop's pool, so it outlives this host pool when that empties and goes.
    var tlsResumption: TLSResumption? {
        get { self.owner.tlsResumptions[self.key] }
        set {
            if self.owner.tlsResumptions.count >= 256, self.owner.tlsResumptions[self.key] == nil {
                // A bound on hosts remembered; forgetting one only costs a full handshake.
                self.owner.tlsResumptions.removeAll(keepingCapacity: true)
            }
            self.owner.tlsResumptions[self.key] = newValue
        }
    }

    init(key: ConnectionKey, tls: TLSContext?, owner: ConnectionPool) {
        self.key = key
        self.tls = tls
        self.owner = owner
        self.machine = PoolStateMachine(maxConnections: owner.loopShare)
    }

    var isEmpty: Bool { self.machine.isEmpty && self.connections.isEmpty && self.waiters.isEmpty }

    func submit(_ task: RequestTask, fresh: Bool) {
        let id = self.owner.nextWaiterID
        self.owner.nextWaiterID &+= 1
        task.waiterID = id
        task.phase = .queued
        let action = self.machine.request(id, fresh: fresh)
        switch action {
        case .lease:
            break
        case .fail:
            task.fail(HTTPClientError(.shutdown, phase: .pool))
            return
        default:
            self.waiters[id] = task
            task.waitDeadline = min(task.deadline, self.owner.loop.now + self.owner.configuration.waitTimeout)
            self.updateTimer(task.waitDeadline)
        }
        self.run(action, leasing: task)
    }

    func removeWaiter(_ task: RequestTask, error: HTTPClientError) {
        if self.machine.removeWaiter(task.waiterID) {
            self.waiters[task.waiterID] = nil
            task.fail(error)
        }
        self.owner.dropIfEmpty(self)
    }

    /// Set when the owner shut this pool down or dropped it; nothing may touch `owner` then.
    var detached = false

    /// One timer for all waiters, at the earliest waiter deadline (as connections do, see
    /// `HTTP1Connection.armedTimer`): a queue of thousands costs one heap entry.
    private var armedTimer: Deadline?

    private func updateTimer(_ deadline: Deadline) {
        guard deadline != .distantFuture else { return }
        if let armed = self.armedTimer, armed <= deadline { return }
        self.armedTimer = deadline
        self.owner.loop.scheduleTimer(at: deadline, target: self, token: deadline.nanoseconds)
    }

    func timerIsCurrent(token: UInt64) -> Bool {
        !self.detached && self.armedTimer?.nanoseconds == token
    }

    /// A waiter's deadline passed: the pool wait timeout, or the request's own if sooner.
    func timerFired(token: UInt64, now: Deadline) {
        // A pool that was shut down or dropped may outlive its owner in the timer heap.
        guard !self.detached, let armed = self.armedTimer, armed.nanoseconds == token else { return }
        self.armedTimer = nil
        var expired: [RequestTask] = []
        var earliest = Deadline.distantFuture
        for task in self.waiters.values {
            if task.waitDeadline <= now {
                expired.append(task)
            } else {
                earliest = min(earliest, task.waitDeadline)
            }
        }
        for task in expired where self.machine.removeWaiter(task.waiterID) {
            self.waiters[task.waiterID] = nil
            let code: HTTPClientError.Code = now >= task.deadline ? .totalTimeout : .poolWaitTimeout
            task.fail(HTTPClientError(code, phase: .pool, detail: "no connection to \(self.key) became free in time"))
        }
        self.updateTimer(earliest)
        self.owner.dropIfEmpty(self)
    }

    private func run(_ action: PoolStateMachine.Action, leasing direct: RequestTask? = nil) {
        switch action {
        case .none:
            break
        case .lease(let connectionID, let waiterID):
            let task = self.waiters.removeValue(forKey: waiterID) ?? direct
            guard let task, let connection = self.connections[connectionID] else { return }
            connection.isLeased = true
            if connection.requestsServed > 0 { self.owner.connectionsReused += 1 }
            connection.run(task)
        case .connect:
            self.startConnection()
        case .replace(let staleID):
            if let stale = self.connections.removeValue(forKey: staleID) {
                stale.close(failingWith: HTTPClientError(.cancelled))
            }
            self.startConnection()
        case .park(let connectionID):
            self.connections[connectionID]?.isLeased = false
            self.connections[connectionID]?.parked()
            self.owner.dropIfEmpty(self)
        case .fail(let waiterID, let connectAgain):
            // Handled by connectionFailed, which has the error.
            _ = (waiterID, connectAgain)
        }
    }

    private func startConnection() {
        let id = self.owner.nextConnectionID
        self.owner.nextConnectionID &+= 1
        let configuration = self.owner.configuration
        let connection = HTTP1Connection(
            id: id, key: self.key, loop: self.owner.loop, pool: self,
            connectTimeout: configuration.connectTimeout, idleTimeout: configuration.idleTimeout,
            limits: configuration.limits, tls: self.key.scheme == .https ? self.tls : nil)
        self.connections[id] = connection
        self.owner.connectionsOpened += 1
        connection.connect()
    }

    // MARK: Events from connections

    func connectionEstablished(_ connection: HTTP1Connection) {
        let action = self.machine.connected(connection.id)
        self.runOrClose(action, connection)
    }

    func connectionFailed(_ connection: HTTP1Connection, error: HTTPClientError) {
        self.connections[connection.id] = nil
        let action = self.machine.connectFailed()
        if case .fail(let waiterID, let connectAgain) = action {
            self.waiters.removeValue(forKey: waiterID)?.fail(error)
            if connectAgain { self.startConnection() }
        }
        self.owner.dropIfEmpty(self)
    }

    func connectionReleased(_ connection: HTTP1Connection) {
        connection.isLeased = false
        let action = self.machine.released(connection.id, reusable: true)
        self.runOrClose(action, connection)
    }

    /// The connection closed (after a request, or while idle). `retry` is a request that
    /// met a stale keep-alive connection and goes once more, on a fresh one.
    func connectionClosed(_ connection: HTTP1Connection, retry: RequestTask?) {
        guard self.connections.removeValue(forKey: connection.id) != nil else {
            if let retry {
                retry.retried = true
                self.submit(retry, fresh: true)
            }
            return
        }
        let action: PoolStateMachine.Action
        if connection.isLeased {
            connection.isLeased = false
            action = self.machine.released(connection.id, reusable: false)
        } else {
            action = self.machine.idleClosed(connection.id)
        }
        if let retry {
            // Queued first, so the pool is not empty (and dropped) while the action runs.
            retry.retried = true
            self.submit(retry, fresh: true)
        }
        self.run(action)
        self.owner.dropIfEmpty(self)
    }

    private func runOrClose(_ action: PoolStateMachine.Action, _ connection: HTTP1Connection) {
        switch action {
        case .lease(let id, _) where id == connection.id, .park(let id) where id == connection.id:
            self.run(action)
        default:
            // Not kept (the pool is shutting down): close it.
            self.connections[connection.id] = nil
            connection.close(failingWith: HTTPClientError(.shutdown))
            self.run(action)
        }
    }

    func shutdown(_ error: HTTPClientError) {
        self.detached = true
        let (idle, waiters) = self.machine.shutdown()
        var queued = error
        queued.phase = .pool
        for id in waiters {
            self.waiters.removeValue(forKey: id)?.fail(queued)
        }
        for id in idle {
            self.connections.removeValue(forKey: id)?.close(failingWith: error)
        }
        for connection in Array(self.connections.values) {
            self.connections[connection.id] = nil
            connection.close(failingWith: error)
        }
    }
}
