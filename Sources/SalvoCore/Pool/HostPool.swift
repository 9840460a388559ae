import SalvoTransport
import HTTPTypes

/// The pool for one key on one loop: ``PoolStateMachine`` plus the objects its ids stand for,
/// and the host's ``HostBudget``, shared with the other loops' pools for the same key.
///
/// Every connection in `connections` holds one place in the budget: taken before it starts,
/// given back when it leaves the dictionary. Loop-confined.
/// Stored properties are `@exclusivity(unchecked)`: the object is touched by its loop's thread
/// only, and no access to a property spans a call that could reach it again, so Swift's
/// dynamic exclusivity checks (12% of the API path's user CPU) buy nothing here.
final class HostPool: TimerTarget {
    let key: ConnectionKey
    /// The TLS context of an https key: every request with this key carries the same one.
    let tls: TLSContext?
    unowned let owner: PoolShard
    let budget: HostBudget
    /// The owner's place among the shards, its coordinator and its counts in the budget: kept
    /// here, read on every event without going through `owner`.
    let shard: Int
    let coordinator: PoolCoordinator
    private let counts: HostBudget.ShardCounts
    /// What `publish()` last wrote, so that an event that changes nothing writes nothing.
    @exclusivity(unchecked) private var published = (idle: 0, waiting: 0, open: 0, oldest: UInt64(0))
    /// Whether other loops share the host's budget (a client with one loop has nobody to
    /// publish to, balance with or move requests to).
    let shared: Bool
    /// Whether each loop keeps its own HTTP/2 connections (``HTTP2Settings/connectionPerLoop``)
    /// rather than sending its requests to another loop's.
    let multiplexesPerLoop: Bool
    @exclusivity(unchecked) var machine: PoolStateMachine
    @exclusivity(unchecked) var connections: [Int: HTTP1Connection] = [:]
    /// The connection parked last, while it is open: idle connections are leased last in,
    /// first out, so the next lease is most often this one — found without hashing its id.
    @exclusivity(unchecked) private var lastParked: HTTP1Connection?
    /// Open HTTP/2 connections, each carrying many requests at once. The machine does not
    /// count them (it knows connections that carry one request); each holds its place in
    /// the host's budget until it closes.
    @exclusivity(unchecked) var multiplexed: [Int: HTTP2Connection] = [:]
    @exclusivity(unchecked) var waiters: [Int: RequestOwner] = [:]
    /// The connection opened to learn the host's version (or to add streams), while it is on
    /// its way (`+HTTP2`).
    @exclusivity(unchecked) var probe: Int?
    /// The probe is this loop's alone (``HTTP2Settings/connectionPerLoop``, the version known),
    /// not the host's one connection at a time.
    @exclusivity(unchecked) var probeIsLocal = false
    /// Set when the owner shut this pool down or dropped it; nothing may touch `owner` then.
    @exclusivity(unchecked) private(set) var detached = false

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

    /// Who watches this host's events, if anyone.
    let observer: (any HostObserver)?
    /// The idle connections and queued requests last told to the observer.
    @exclusivity(unchecked) private var observed = (idle: 0, queued: 0)

    init(key: ConnectionKey, tls: TLSContext?, owner: PoolShard, budget: HostBudget) {
        self.key = key
        self.tls = tls
        self.owner = owner
        self.observer = owner.hostObserver(for: key)
        self.pipeliningDepth = owner.configuration.pipeliningDepth
        self.budget = budget
        self.shard = owner.index
        self.coordinator = owner.coordinator
        self.counts = budget.shards[owner.index]
        self.shared = budget.shards.count > 1
        self.multiplexesPerLoop = owner.configuration.http2.connectionPerLoop
        self.machine = PoolStateMachine(maxConnections: budget.limit)
    }

    var isEmpty: Bool { self.machine.isEmpty && self.connections.isEmpty && self.multiplexed.isEmpty && self.waiters.isEmpty }

    /// Connections of this shard, of either version, connecting ones included.
    private var openCount: Int { self.connections.count + self.multiplexed.count }

    /// Connections free for a request now: idle HTTP/1.1 ones and HTTP/2 ones with a stream to spare.
    private var idleCount: Int {
        var idle = self.machine.idle.count
        for connection in self.multiplexed.values where connection.hasRoom { idle += 1 }
        return idle
    }

    /// Has the owner drop this pool if it is empty (asked only then: see ``pipeliningDepth``).
    func dropIfEmpty() {
        if self.isEmpty { self.owner.dropIfEmpty(self) }
    }

    /// The owner dropped this pool (it is empty) or shut it down: its budget goes back.
    func detach() {
        guard !self.detached else { return }
        self.detached = true
        self.counts.publish(idle: 0, waiting: 0, open: 0, oldestWaiting: 0)
        self.coordinator.returnBudget(for: self.key)
    }

    /// When this shard's longest-waiting request was queued (ns), 0 when none waits. The queue
    /// is FIFO but for retries and moved requests put first, so the first few tell.
    private var oldestWaiting: UInt64 {
        var oldest = UInt64.max
        for id in self.machine.waiters.prefix(3) {
            if let queued = self.waiters[id]?.wait.queuedAt.nanoseconds, queued != 0 { oldest = min(oldest, queued) }
        }
        return oldest == .max ? 0 : oldest
    }

    /// What placement and the other shards see of this one.
    func publish() {
        if let observer = self.observer {
            let now = (idle: self.idleCount, queued: self.waiters.count)
            if now != self.observed {
                self.observed = now
                observer.poolChanged(idle: now.idle, queued: now.queued)
            }
        }
        guard self.shared, !self.detached else { return }
        // Streams to spare draw other loops' requests here unless each loop keeps its own.
        let idle = self.multiplexesPerLoop ? self.machine.idle.count : self.idleCount
        let waiting = self.machine.waiters.count
        let open = self.openCount
        let oldest = self.oldestWaiting
        guard (idle, waiting, open, oldest) != self.published else { return }
        self.published = (idle, waiting, open, oldest)
        self.counts.publish(idle: idle, waiting: waiting, open: open, oldestWaiting: oldest)
    }

    // MARK: Requests

    /// Queues `owner`'s request, or runs it at once on an idle connection. `movable`: while it
    /// waits it may move to a shard with an idle connection; `urgent`: it goes first (it
    /// waited on another shard already, or is being sent again).
    func submit(_ owner: RequestOwner, fresh: Bool, movable: Bool = true, urgent: Bool = false) {
        defer { self.publish() }
        if !self.multiplexed.isEmpty, let connection = self.multiplexedWithRoom() {
            // HTTP/2 with a stream to spare: no queue. (A request that asked for a new
            // connection is served too: the one it left is going away and has no room.)
            self.startStream(owner, on: connection)
            return
        }
        let id = self.owner.nextWaiterID
        self.owner.nextWaiterID &+= 1
        owner.wait.id = id
        owner.queued()
        let action = self.machine.request(id, fresh: fresh, urgent: urgent)
        switch action {
        case .lease:
            break
        case .fail:
            owner.fail(TransportError(.shutdown, phase: .pool))
            return
        default:
            self.waiters[id] = owner
            if owner.wait.queuedAt.nanoseconds == 0 {
                owner.wait.queuedAt = self.owner.loop.now
                owner.wait.deadline = min(owner.deadline, owner.headDeadline, self.owner.loop.now + self.owner.configuration.waitTimeout)
            }
            self.updateTimer(owner.wait.deadline)
        }
        self.run(action, leasing: owner, movable: movable)
        if self.pipeliningDepth > 1, !fresh, self.waiters[id] === owner,
           self.machine.waiters.count == self.machine.connecting + 1 {
            // It would wait for a connection to come free, and nobody older waits uncovered
            // (they go first, pipelinable or not): a busy connection may take it in line.
            self.pipelineWaiter(owner)
        }
    }

    /// Requests one connection may carry at once (the owner's setting, read once: the owner
    /// is `unowned`, and each use of it is a check that it is alive).
    private let pipeliningDepth: Int

    /// Hands waiting `owner` to the leased connection with the shortest line that takes it.
    private func pipelineWaiter(_ owner: RequestOwner) {
        var best: HTTP1Connection? = nil
        for connection in self.connections.values where connection.isLeased {
            if connection.canPipeline(owner, depth: self.pipeliningDepth),
               best.map({ connection.line.count < $0.line.count }) ?? true {
                best = connection
            }
        }
        guard let connection = best else { return }
        self.hand(owner, toLineOf: connection)
    }

    /// A connection moved on to the next request in its line: the oldest waiters go into
    /// the line while they can (in queue order: one that cannot stops the others).
    func lineHasRoom(_ connection: HTTP1Connection) {
        guard self.pipeliningDepth > 1 else { return }
        while self.machine.waiters.count > self.machine.connecting, let id = self.machine.waiters.first,
              !self.machine.wantsFresh(id), let owner = self.waiters[id], connection.canPipeline(owner, depth: self.pipeliningDepth) {
            self.hand(owner, toLineOf: connection)
        }
        self.publish()
    }

    private func hand(_ owner: RequestOwner, toLineOf connection: HTTP1Connection) {
        guard self.machine.removeWaiter(owner.wait.id) else { return }
        self.waiters[owner.wait.id] = nil
        self.counters.reused += 1
        self.counters.pipelined += 1
        self.observer?.connectionReused()
        connection.addToLine(owner)
        // Its wait deadline still holds while it waits in line; a later resubmission
        // starts a new wait.
        owner.wait.queuedAt = Deadline(nanoseconds: 0)
    }

    /// This host's counters on this loop, since the pool was made.
    @exclusivity(unchecked) var counters = HostPoolStatistics()

    /// This host's connections and queue on this loop now.
    var gauges: (open: Int, idle: Int, leased: Int, connecting: Int, queued: Int, http2: Int, streams: Int) {
        var busy = 0
        var streams = 0
        for connection in self.multiplexed.values {
            streams += connection.streams.count
            if !connection.streams.isEmpty { busy += 1 }
        }
        return (self.openCount, self.machine.idle.count + self.multiplexed.count - busy, self.machine.leased + busy,
                self.machine.connecting, self.waiters.count, self.multiplexed.count, streams)
    }

    /// A request of this host got its whole response, of `status`, `startedAt` to `end`.
    /// (Failures are counted where a call fails, by its owner: see ``PoolShard/countFailure(of:)``.)
    @inline(__always)
    func requestEnded(status: Int, startedAt: Deadline, end: Deadline) {
        self.counters.requestsCompleted += 1
        if let observer = self.observer {
            let nanoseconds = end.nanoseconds > startedAt.nanoseconds ? end.nanoseconds - startedAt.nanoseconds : 0
            observer.requestEnded(status: status, duration: .nanoseconds(Int64(clamping: nanoseconds)))
        }
    }

    func removeWaiter(_ owner: RequestOwner, error: TransportError) {
        // Waiter ids are this loop's: the owner must be the one queued under its id here.
        if self.waiters[owner.wait.id] === owner, self.machine.removeWaiter(owner.wait.id) {
            self.waiters[owner.wait.id] = nil
            owner.fail(error)
        }
        self.publish()
        self.dropIfEmpty()
    }

    // MARK: Waiting

    /// One timer for all waiters, at the earliest waiter deadline (as connections keep one):
    /// a queue of thousands costs one heap entry.
    @exclusivity(unchecked) private var timer = ArmedTimer()

    private func updateTimer(_ deadline: Deadline) {
        self.timer.arm(at: deadline, on: self.owner.loop, for: self)
    }

    func timerIsCurrent(token: UInt64) -> Bool {
        !self.detached && self.timer.isCurrent(token)
    }

    /// A waiter's deadline passed: the pool wait timeout, or the request's own if sooner.
    func timerFired(token: UInt64, now: Deadline) {
        // A pool that was shut down or dropped may outlive its owner in the timer heap.
        guard !self.detached, self.timer.fired(token) else { return }
        var expired: [RequestOwner] = []
        var earliest = Deadline.distantFuture
        for waiter in self.waiters.values {
            if waiter.wait.deadline <= now {
                expired.append(waiter)
            } else {
                earliest = min(earliest, waiter.wait.deadline)
            }
        }
        for waiter in expired where self.machine.removeWaiter(waiter.wait.id) {
            self.waiters[waiter.wait.id] = nil
            let code = waiter.waitExpiry(at: now)
            waiter.fail(TransportError(code, phase: .pool, detail: "no connection to \(self.key) became free in time"))
        }
        self.updateTimer(earliest)
        self.publish()
        self.dropIfEmpty()
    }

    // MARK: Actions

    /// The open connection `id`: the one at hand (`known`) or parked last when it is that one,
    /// else looked up.
    private func connection(_ id: Int, known: HTTP1Connection?) -> HTTP1Connection? {
        if let known, known.id == id { return known }
        if let parked = self.lastParked, parked.id == id { return parked }
        return self.connections[id]
    }

    /// Carries out the machine's `action`. `direct`: the request just submitted, which a lease
    /// may be for; `known`: the connection the action is about, when the caller has it.
    func run(_ action: PoolStateMachine.Action, leasing direct: RequestOwner? = nil, movable: Bool = true,
             known: HTTP1Connection? = nil) {
        switch action {
        case .none, .fail:
            // A failed connect's waiter is failed by connectionFailed, which has the error.
            break
        case .lease(let connectionID, let waiterID):
            // A request leased as it came was never queued: no look-up for it.
            let owner = direct.flatMap { $0.wait.id == waiterID ? $0 : nil } ?? self.waiters.removeValue(forKey: waiterID)
            guard let owner, let connection = self.connection(connectionID, known: known) else { return }
            connection.isLeased = true
            owner.wait.queuedAt = Deadline(nanoseconds: 0)
            switch connection.run(owner) {
            case .started(let reused):
                if reused {
                    self.counters.reused += 1
                    self.observer?.connectionReused()
                    // More wait behind it: they may line up on this connection now.
                    if self.pipeliningDepth > 1, !self.machine.waiters.isEmpty { self.lineHasRoom(connection) }
                }
            case .stale:
                // The idle connection turned out closed before the request went out: the
                // connection is gone first, then the request's owner decides what follows
                // (before this pool may be dropped as empty: it is likely sent again here).
                self.forgetClosed(connection)
                owner.connectionStale()
                self.dropIfEmpty()
            }
        case .connect:
            self.connectIfBudgetAllows(movable: movable)
        case .replace(let staleID):
            self.discard(staleID, error: .cancelled(.internal))
            self.connectIfBudgetAllows(movable: movable)
        case .park(let connectionID):
            if let connection = self.connection(connectionID, known: known) {
                connection.isLeased = false
                connection.parked()
                if self.lastParked !== connection { self.lastParked = connection }
            }
            // Idle here while a request waits on another shard: have it come over.
            self.publish()
            if self.shared { self.coordinator.pullWaiter(self.key, budget: self.budget, to: self.shard) }
            self.dropIfEmpty()
        case .close(let connectionID):
            // Its place in the budget goes to a shard that waits for one.
            self.discard(connectionID, error: .cancelled(.internal, detail: "its place went to another loop"))
            self.coordinator.announceCapacity(self.key, budget: self.budget, from: self.shard)
        }
    }

    /// Starts the connection the machine asked for, if the host's budget has a place and this
    /// shard is within its share of it; otherwise the waiters stay queued, and the oldest moves
    /// to a shard with an idle connection if one has.
    @discardableResult
    private func connectIfBudgetAllows(movable: Bool = true) -> Bool {
        if self.mayMultiplex, self.shared, self.budget.speaksHTTP2, movable, !self.multiplexesPerLoop,
           let shard = self.budget.shardWithIdleConnection(besides: self.shard) {
            // One HTTP/2 connection serves the host's requests from every loop: the waiting
            // requests go to the loop whose connection has streams to spare.
            self.machine.connectDeclined()
            for _ in 0..<self.machine.waiters.count { self.moveOldestWaiter(to: shard, urgent: false) }
            self.publish()
            return false
        }
        let allowed = !self.shared || self.budget.mayConnect(shard: self.shard, open: self.openCount)
        guard allowed, self.budget.tryAcquire() else {
            self.machine.connectDeclined()
            if movable && self.shared {
                if let shard = self.budget.shardWithIdleConnection(besides: self.shard) {
                    self.moveOldestWaiter(to: shard, urgent: true)
                } else if self.connections.isEmpty, !self.multiplexed.values.contains(where: { !$0.isGoingAway }),
                          let shard = self.budget.shardWithMostConnections(besides: self.shard) {
                    // No connection here that will take them, and none to be had: wait in the
                    // queue of a shard that has some, rather than for a place that may never
                    // come free. (An HTTP/2 connection of this loop that is merely full keeps
                    // them: its streams free up.)
                    // Each once: a move that fails (that loop stopped) puts the request back here.
                    for _ in 0..<self.machine.waiters.count { self.moveOldestWaiter(to: shard, urgent: false) }
                }
            }
            self.publish()
            return false
        }
        let id = self.owner.nextConnectionID
        if self.mayMultiplex && !self.budget.probeFailed {
            // One connection at a time, host-wide, while the host may speak HTTP/2: until it
            // shows which version it speaks (if HTTP/2, that one carries every waiting request,
            // and a burst opens one connection, not one per request), and then whenever all
            // its connections are full (a second opens only for what the first cannot take).
            if self.multiplexesPerLoop && self.budget.speaksHTTP2 {
                // Each loop opens its own connections: one at a time on this loop, whatever
                // the other loops are opening.
                guard self.probe == nil else {
                    self.budget.release()
                    self.machine.connectDeclined()
                    self.publish()
                    return false
                }
                self.probeIsLocal = true
            } else {
                guard self.budget.startProbe() else {
                    self.budget.release()
                    self.machine.connectDeclined()
                    self.publish()
                    // The other shard's connection may have opened between the try and the
                    // publish, its announcement missing this shard's requests: look again.
                    if !self.budget.isProbing { self.capacityAvailable() }
                    return false
                }
                self.probeIsLocal = false
            }
            self.probe = id
        }
        self.owner.nextConnectionID &+= 1
        let configuration = self.owner.configuration
        let connection = HTTP1Connection(
            id: id, key: self.key, loop: self.owner.loop, pool: self,
            connectTimeout: configuration.connectTimeout, idleTimeout: configuration.idleTimeout,
            limits: configuration.limits, resolver: configuration.resolver, tls: self.key.scheme == .https ? self.tls : nil)
        self.connections[id] = connection
        self.owner.connectionsOpened += 1
        self.counters.opened += 1
        connection.connect()
        return true
    }

    /// Closes a connection the machine no longer counts, and gives its place back.
    private func discard(_ id: Int, error: TransportError) {
        guard let connection = self.connections.removeValue(forKey: id) else { return }
        if self.lastParked === connection { self.lastParked = nil }
        self.probeEnded(connection)
        self.counters.closedByUs += 1
        if connection.reportedOpen { self.observer?.connectionClosed(id: id, byServer: false) }
        self.budget.release()
        connection.isLeased = false
        connection.close(failingWith: error)
    }

    /// A connection left `connections` on its own (closed or failed): its place goes back.
    private func forget(_ connection: HTTP1Connection) -> Bool {
        if self.lastParked === connection { self.lastParked = nil }
        guard self.connections.removeValue(forKey: connection.id) != nil else { return false }
        // Gone before it opened (an open probe ended at its opening).
        self.probeEnded(connection, failed: true)
        self.budget.release()
        return true
    }

    /// Tells waiting shards about free places left after this shard's own needs.
    func announceIfRoomLeft() {
        if self.budget.openConnections < self.budget.limit {
            self.coordinator.announceCapacity(self.key, budget: self.budget, from: self.shard)
        }
    }

    // MARK: Events from connections

    /// What the other shards need of a connection of this one that is free now.
    private var demand: PoolStateMachine.Demand {
        guard self.shared else { return .none }
        return self.budget.demand(besides: self.shard, open: self.openCount, oldestWaiting: self.oldestWaiting,
                           now: self.owner.loop.now)
    }

    func connectionEstablished(_ connection: HTTP1Connection) {
        if connection.negotiatedHTTP2 {
            self.multiplex(connection)
            return
        }
        let probed = self.mayMultiplex
        if probed {
            // This host speaks HTTP/1.1: the connections held back for the probe may start.
            self.budget.speaksOnlyHTTP1 = true
            self.probeEnded(connection)
        }
        let action = self.machine.connected(connection.id, demand: self.demand)
        self.runOrClose(action, connection)
        if probed { self.connectForWaiters() }
        self.publish()
    }

    /// Starts connections for the requests that wait without one on its way, as the
    /// machine and the budget allow.
    private func connectForWaiters() {
        while self.machine.waiters.count > self.machine.connecting, case .connect = self.machine.capacityAvailable() {
            guard self.connectIfBudgetAllows() else { break }
        }
        self.publish()
    }

    func connectionFailed(_ connection: HTTP1Connection, error: TransportError) {
        _ = self.forget(connection)
        let action = self.machine.connectFailed()
        if case .fail(let waiterID, let connectAgain) = action {
            if let waiter = self.waiters.removeValue(forKey: waiterID) {
                    waiter.fail(error)
            }
            if connectAgain { self.connectIfBudgetAllows() }
        }
        self.announceIfRoomLeft()
        self.publish()
        self.dropIfEmpty()
    }

    func connectionReleased(_ connection: HTTP1Connection) {
        connection.isLeased = false
        let action = self.machine.released(connection.id, reusable: true, demand: self.demand)
        self.runOrClose(action, connection)
        self.publish()
    }

    /// The connection closed (after a request, or while idle).
    func connectionClosed(_ connection: HTTP1Connection) {
        self.forgetClosed(connection)
        self.dropIfEmpty()
    }

    /// Counts a closed connection out and acts on what its place allows now.
    private func forgetClosed(_ connection: HTTP1Connection) {
        defer { self.publish() }
        if self.connections[connection.id] != nil {
            if connection.closedByPeer { self.counters.closedByServer += 1 } else { self.counters.closedByUs += 1 }
            if connection.reportedOpen { self.observer?.connectionClosed(id: connection.id, byServer: connection.closedByPeer) }
        }
        guard self.forget(connection) else { return }
        let action: PoolStateMachine.Action
        if connection.isLeased {
            connection.isLeased = false
            action = self.machine.released(connection.id, reusable: false)
        } else {
            action = self.machine.idleClosed(connection.id)
        }
        self.run(action)
        self.announceIfRoomLeft()
    }

    private func runOrClose(_ action: PoolStateMachine.Action, _ connection: HTTP1Connection) {
        switch action {
        case .lease(let id, _) where id == connection.id, .park(let id) where id == connection.id,
             .close(let id) where id == connection.id, .replace(let id) where id == connection.id:
            self.run(action, known: connection)
        default:
            // Not kept (the pool is shutting down): close it.
            self.discard(connection.id, error: TransportError(.shutdown))
            self.run(action)
        }
    }

    func shutdown(_ error: TransportError) {
        let (idle, waiters) = self.machine.shutdown()
        var queued = error
        queued.phase = .pool
        for id in waiters {
            self.waiters.removeValue(forKey: id)?.fail(queued)
        }
        for id in idle {
            self.discard(id, error: error)
        }
        for id in Array(self.connections.keys) {
            self.discard(id, error: error)
        }
        for connection in Array(self.multiplexed.values) {
            self.multiplexed[connection.id] = nil
            self.counters.closedByUs += 1
            if connection.reportedOpen { self.observer?.connectionClosed(id: connection.id, byServer: false) }
            self.budget.release()
            connection.close(failingWith: error)
        }
        // Nothing idle or waiting is left: the observer hears it before the pool goes.
        if let observer = self.observer, self.observed != (0, 0) {
            self.observed = (0, 0)
            observer.poolChanged(idle: 0, queued: 0)
        }
        self.detach()
    }
}
