import SalvoTransport
import DequeModule

/// The keep-alive pool for one (scheme, host, port) on one event loop, with no I/O.
///
/// Theory of operation: connections are idle (parked, LIFO so the warmest is reused
/// first), leased (carrying a request) or connecting. Their sum never exceeds
/// `maxConnections`. A request takes an idle connection if there is one; otherwise it
/// joins a FIFO queue, and a new connection is started when there is room. A connection
/// that comes up, or comes back reusable, serves the oldest waiter; with no waiter it is
/// parked. Each failed connection attempt fails the oldest waiter (so a dead host fails
/// requests instead of parking them) and starts another attempt if more are waiting.
/// Waiters leave the queue on timeout or cancellation. A waiter whose request asked for a new
/// connection (sent again after a stale one, a 307's POST) is served only by one: a connection
/// coming back from a request makes room for one (it is closed and a new one started) unless a
/// new connection is already on its way for each such waiter; then it serves the oldest waiter
/// that did not ask. Such a waiter keeps its turn however many others arrive.
///
/// One machine runs per loop (a shard), and the host's limit is shared by all of them through
/// a budget the driver holds (``HostBudget``): `maxConnections` is the whole limit, and when
/// the machine asks to `.connect` but the budget is spent elsewhere, the driver says so with
/// ``connectDeclined()`` — the waiter stays queued — and may move waiters to a shard with an
/// idle connection (``removeOldestWaiter()``). A shard that waits with fewer connections than
/// its fair share while this one has more is ``Demand/starved``: a connection coming back here
/// is closed so that its place goes there. When the budget frees up, ``capacityAvailable()``
/// lets a waiting shard connect.
///
/// Connections and waiters are plain integer ids: the driver (``HostPool``) maps them
/// to objects.
@_spi(Benchmarks) public struct PoolStateMachine {
    public enum Action: Equatable {
        case none
        /// Run the waiter's request on the connection.
        case lease(connection: Int, waiter: Int)
        /// Start a new connection (the waiter is queued for whichever connection comes first).
        case connect
        /// Close this idle connection and start a new one (a retry that wants a fresh one).
        case replace(closing: Int)
        /// Keep the connection idle and arm its idle timeout.
        case park(connection: Int)
        /// Fail this waiter; start another connection too when `connectAgain`.
        case fail(waiter: Int, connectAgain: Bool)
        /// Close this connection, which the machine no longer counts: another shard needs
        /// the place it takes in the host's budget.
        case close(connection: Int)
    }

    /// What the other shards of the host need, as the driver reads it from the budget.
    public enum Demand: Equatable {
        /// Nothing this shard must give up.
        case none
        /// Another shard waits with far fewer connections than its fair share, and this shard
        /// has more than its own: a connection coming back goes there even if requests wait here.
        case starved
    }

    let maxConnections: Int
    private(set) var idle: [Int] = []
    private(set) var leased = 0
    private(set) var connecting = 0
    private(set) var waiters = Deque<Int>()
    /// Waiters that asked for a new connection (a subset of `waiters`).
    private(set) var freshWaiters: Set<Int> = []
    private(set) var isShutdown = false

    public init(maxConnections: Int) {
        precondition(maxConnections > 0)
        self.maxConnections = maxConnections
    }

    var total: Int { self.idle.count + self.leased + self.connecting }
    var isEmpty: Bool { self.total == 0 && self.waiters.isEmpty }

    /// A request arrives. `fresh` asks for a new connection (a retry after a stale one);
    /// `urgent` puts it first in the queue if it has to wait (one that already waited on
    /// another shard and moved here).
    public mutating func request(_ waiter: Int, fresh: Bool = false, urgent: Bool = false) -> Action {
        if self.isShutdown { return .fail(waiter: waiter, connectAgain: false) }
        if !fresh, let connection = self.idle.popLast() {
            self.leased += 1
            return .lease(connection: connection, waiter: waiter)
        }
        if fresh || urgent {
            self.waiters.prepend(waiter)
        } else {
            self.waiters.append(waiter)
        }
        if fresh { self.freshWaiters.insert(waiter) }
        if self.total < self.maxConnections {
            self.connecting += 1
            return .connect
        }
        if fresh, let stale = self.idle.popLast() {
            // Full, but an idle connection can make room: it is likely as stale as the last.
            self.connecting += 1
            return .replace(closing: stale)
        }
        return .none
    }

    /// A new connection is ready. `demand`: what the other shards need.
    public mutating func connected(_ connection: Int, demand: Demand = .none) -> Action {
        precondition(self.connecting > 0)
        self.connecting -= 1
        return self.offer(connection, isNew: true, demand: demand)
    }

    /// The driver could not start the connection the machine asked for: the host's budget is
    /// spent on other shards. The waiters stay queued.
    public mutating func connectDeclined() {
        precondition(self.connecting > 0)
        self.connecting -= 1
    }

    /// A connection the machine asked for came up as one it does not manage (HTTP/2, which
    /// carries many requests at once; its driver serves waiters on it): it is no longer counted.
    public mutating func connectedElsewhere() {
        precondition(self.connecting > 0)
        self.connecting -= 1
    }

    /// The host's budget has room again: connect if anyone waits.
    public mutating func capacityAvailable() -> Action {
        self.replacementIfNeeded()
    }

    /// Takes the oldest waiter out of the queue, to serve it on another shard that has an
    /// idle connection; nil when none waits.
    public mutating func removeOldestWaiter() -> Int? {
        self.dequeue(at: 0)
    }

    /// Whether `waiter` asked for a new connection.
    public func wantsFresh(_ waiter: Int) -> Bool {
        self.freshWaiters.contains(waiter)
    }

    private mutating func dequeue(at index: Int) -> Int? {
        guard index < self.waiters.count else { return nil }
        let waiter = self.waiters.remove(at: index)
        if !self.freshWaiters.isEmpty { self.freshWaiters.remove(waiter) }
        return waiter
    }

    /// A connection attempt failed.
    public mutating func connectFailed() -> Action {
        precondition(self.connecting > 0)
        self.connecting -= 1
        guard let waiter = self.dequeue(at: 0) else { return .none }
        let again = !self.waiters.isEmpty && self.total < self.maxConnections && !self.isShutdown
        if again { self.connecting += 1 }
        return .fail(waiter: waiter, connectAgain: again)
    }

    /// A leased connection finished its request. `demand`: what the other shards need.
    public mutating func released(_ connection: Int, reusable: Bool, demand: Demand = .none) -> Action {
        precondition(self.leased > 0)
        self.leased -= 1
        if reusable && !self.isShutdown {
            return self.offer(connection, isNew: false, demand: demand)
        }
        return self.replacementIfNeeded()
    }

    /// An idle connection closed (the server closed it, or its idle timeout fired).
    public mutating func idleClosed(_ connection: Int) -> Action {
        if let index = self.idle.firstIndex(of: connection) {
            self.idle.remove(at: index)
        }
        return self.replacementIfNeeded()
    }

    /// A waiter gave up (timeout or cancellation). Returns whether it was still queued.
    public mutating func removeWaiter(_ waiter: Int) -> Bool {
        guard let index = self.waiters.firstIndex(of: waiter) else { return false }
        _ = self.dequeue(at: index)
        return true
    }

    /// Stops the pool: returns the idle connections to close and the waiters to fail.
    public mutating func shutdown() -> (idle: [Int], waiters: [Int]) {
        self.isShutdown = true
        // Not `Array` of an empty deque: that writes a count of 0 into the standard library's
        // one shared empty array, which ThreadSanitizer sees as two loops racing.
        let result = (self.idle, self.waiters.isEmpty ? [] : Array(self.waiters))
        self.idle.removeAll()
        self.waiters.removeAll()
        self.freshWaiters.removeAll()
        return result
    }

    /// A connection is free: `isNew` when it just opened, else it comes back from a request.
    private mutating func offer(_ connection: Int, isNew: Bool, demand: Demand) -> Action {
        if self.isShutdown && self.waiters.isEmpty {
            return .none
        }
        if demand == .starved {
            // Another shard is below its share and this one above: rebalance.
            return .close(connection: connection)
        }
        // A new connection serves the oldest waiter. One coming back serves it too, unless it
        // asked for a new one: then, while no new connection is on its way for each such
        // waiter, this one makes room for one (closed, a new one started) — the oldest waiter
        // keeps its turn, however many others keep arriving; else the oldest that did not ask.
        if !isNew, !self.freshWaiters.isEmpty {
            if self.freshWaiters.count > self.connecting {
                self.connecting += 1
                return .replace(closing: connection)
            }
            if let index = self.waiters.firstIndex(where: { !self.freshWaiters.contains($0) }), let waiter = self.dequeue(at: index) {
                self.leased += 1
                return .lease(connection: connection, waiter: waiter)
            }
        } else if let waiter = self.dequeue(at: 0) {
            self.leased += 1
            return .lease(connection: connection, waiter: waiter)
        }
        self.idle.append(connection)
        return .park(connection: connection)
    }

    private mutating func replacementIfNeeded() -> Action {
        if !self.waiters.isEmpty && self.total < self.maxConnections && !self.isShutdown {
            self.connecting += 1
            return .connect
        }
        return .none
    }
}
