import SalvoTransport
import Synchronization

/// One host's connection limit, shared by the pool shards of all of a client's loops.
///
/// A shard takes a place before it starts a connection (``tryAcquire()``) and gives it back
/// when the connection is gone (``release()``), so the host never has more than `limit`
/// connections however the requests fall on the loops. Each shard also publishes how many
/// idle connections it has and how many requests wait in it, which is what placement and
/// lending read (``PoolCoordinator``). Lock-free: atomics only, read and written by loops and
/// by callers placing requests.
final class HostBudget: Sendable {
    /// One shard's published counts. Advisory: read without ordering, re-checked on the
    /// shard's own loop before anything is done about them.
    final class ShardCounts: Sendable {
        let idle = Atomic<Int>(0)
        let waiting = Atomic<Int>(0)
        /// Connections of the shard: idle, busy or connecting.
        let open = Atomic<Int>(0)
        /// When the shard's oldest waiting request joined the queue (ns), 0 when none waits.
        let oldestWaiting = Atomic<UInt64>(0)
        /// Requests placed on the shard from outside its loop that it has not received yet:
        /// the load the published counts do not show yet.
        let inbound = Atomic<Int>(0)

        /// A request placed here reached the shard (or will never reach it).
        func arrived() {
            self.inbound.subtract(1, ordering: .relaxed)
        }

        /// The shard's counts after an event on its loop (by its host pool, which writes only
        /// what changed).
        func publish(idle: Int, waiting: Int, open: Int, oldestWaiting: UInt64) {
            self.idle.store(idle, ordering: .relaxed)
            self.waiting.store(waiting, ordering: .relaxed)
            self.open.store(open, ordering: .relaxed)
            self.oldestWaiting.store(oldestWaiting, ordering: .relaxed)
        }

        // Padding: each shard's counts are written by its own loop and read by the others.
        // Small objects allocated one after the other can share a cache line; past 64 bytes
        // they cannot, and two loops' writes do not fight over one.
        private let padding = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
    }

    /// How long a shard's oldest request must have waited before another shard gives up a
    /// connection for it. A new connection costs a handshake: worth it for a request that is
    /// really stuck, not for one that its own shard serves in a moment (the tail of a burst,
    /// or two shards' queues a few requests apart).
    static let patience: Duration = .milliseconds(10)

    let limit: Int
    private let open = Atomic<Int>(0)
    private let versions = Atomic<UInt8>(0)

    /// A connection to the host negotiated HTTP/2: requests go to a connection with a stream
    /// to spare, on any loop, before a new one is opened.
    var speaksHTTP2: Bool {
        get { self.versions.load(ordering: .relaxed) & 1 != 0 }
        set { if newValue { self.versions.bitwiseOr(1, ordering: .relaxed) } }
    }

    /// A connection is on its way to learn which version the host speaks (see
    /// ``startProbe()``).
    private let probing = Atomic<Bool>(false)

    /// Takes the right to open the host's next connection while it may speak HTTP/2 — the one
    /// that learns its version, or, once it is known, the one that adds streams when the others
    /// are full: false when another shard's is on its way.
    func startProbe() -> Bool {
        self.probing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// Whether such a connection is on its way.
    var isProbing: Bool { self.probing.load(ordering: .acquiring) }

    /// The probe's connection opened, or failed (`failed`: connections go in parallel again
    /// until one opens, so that a host that does not answer fails its requests together,
    /// not one connect timeout after another).
    func endProbe(failed: Bool) {
        if failed {
            self.versions.bitwiseOr(4, ordering: .relaxed)
        } else {
            self.versions.bitwiseAnd(~4, ordering: .relaxed)
        }
        self.probing.store(false, ordering: .releasing)
    }

    /// The last connection that tried to learn the version failed.
    var probeFailed: Bool { self.versions.load(ordering: .relaxed) & 4 != 0 }

    /// A connection that could have been HTTP/2 came up as HTTP/1.1: connections are opened
    /// one per waiting request again, not one at a time.
    var speaksOnlyHTTP1: Bool {
        get { self.versions.load(ordering: .relaxed) & 2 != 0 }
        set { if newValue { self.versions.bitwiseOr(2, ordering: .relaxed) } }
    }
    let shards: [ShardCounts]
    /// Where placement starts looking, turned on each time, so ties spread over the shards.
    private let rotation = Atomic<Int>(0)

    init(limit: Int, loops: Int) {
        self.limit = limit
        self.shards = (0..<loops).map { _ in ShardCounts() }
    }

    /// Connections open or connecting, all shards together.
    var openConnections: Int { self.open.load(ordering: .relaxed) }

    /// The most connections that were open or connecting at once (per new connection, not
    /// per request).
    var peakOpenConnections: Int { self.peak.load(ordering: .relaxed) }
    private let peak = Atomic<Int>(0)

    /// Takes a place for a new connection; false when the limit is reached.
    func tryAcquire() -> Bool {
        var current = self.open.load(ordering: .relaxed)
        while current < self.limit {
            let (exchanged, actual) = self.open.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged {
                self.peak.max(current + 1, ordering: .relaxed)
                return true
            }
            current = actual
        }
        return false
    }

    /// Gives back the place of a connection that is gone.
    func release() {
        self.open.subtract(1, ordering: .acquiringAndReleasing)
    }

    /// A shard's counts after an event on its loop.
    func publish(shard: Int, idle: Int, waiting: Int, open: Int, oldestWaiting: Deadline?) {
        self.shards[shard].publish(idle: idle, waiting: waiting, open: open, oldestWaiting: oldestWaiting?.nanoseconds ?? 0)
    }

    /// Whether shard `shard`, with `open` connections, may start one more. Up to its fair
    /// share (the limit split among the shards with requests waiting or on their way, rounded
    /// up) it may; past it, only into places no other shard could claim within its own share.
    /// Without this, the shard whose loop sees a burst first would take the whole limit, and
    /// the others would get their share only by closing its connections.
    func mayConnect(shard: Int, open: Int) -> Bool {
        var demanding = 1
        for (index, counts) in self.shards.enumerated() where index != shard {
            if counts.waiting.load(ordering: .relaxed) > 0 || counts.inbound.load(ordering: .relaxed) > 0 { demanding += 1 }
        }
        let fairShare = (self.limit + demanding - 1) / demanding
        if open < fairShare { return true }
        // Past its share: what the others still need, up to their shares, stays theirs.
        var claimed = self.openConnections
        for (index, counts) in self.shards.enumerated() where index != shard {
            let owned = counts.open.load(ordering: .relaxed)
            let wanted = owned + counts.waiting.load(ordering: .relaxed) + counts.inbound.load(ordering: .relaxed)
            claimed += max(0, min(fairShare, wanted) - owned)
        }
        return claimed < self.limit
    }

    /// Whether shard `shard` — with `open` connections, and its oldest waiting request queued
    /// at `oldestWaiting` (ns, 0 when none waits) — should give up a connection that is free at
    /// `now` to a starved shard: one whose oldest request has waited ``patience`` with less
    /// than half its fair share (the limit split evenly among the shards with requests
    /// waiting) while this one has more than its share. The slack (half a share, the
    /// patience) keeps small or passing imbalances from costing new connections. (A shard with
    /// no connection at all does not wait for this: its requests move to a shard that has
    /// some, see ``shardWithMostConnections(besides:)``.)
    func demand(besides shard: Int, open: Int, oldestWaiting: UInt64, now: Deadline) -> PoolStateMachine.Demand {
        var demanding = oldestWaiting != 0 ? 1 : 0
        var fewestOpen = Int.max
        let stuckSince = now.nanoseconds &- Self.patience.nanosecondsClamped
        for (index, counts) in self.shards.enumerated() where index != shard {
            let since = counts.oldestWaiting.load(ordering: .relaxed)
            guard since != 0, counts.waiting.load(ordering: .relaxed) > 0 else { continue }
            demanding += 1
            if since <= stuckSince { fewestOpen = min(fewestOpen, counts.open.load(ordering: .relaxed)) }
        }
        guard fewestOpen != .max else { return .none }
        let fairShare = max(1, self.limit / demanding)
        return fewestOpen < max(1, fairShare / 2) && open > fairShare ? .starved : .none
    }

    /// The shard other than `shard` with the most connections, if any has one: where requests
    /// go from a shard that has none and cannot make one (a limit smaller than the number of
    /// busy loops), to wait in one queue rather than be stranded.
    func shardWithMostConnections(besides shard: Int) -> Int? {
        var best: Int? = nil
        var most = 0
        for (index, counts) in self.shards.enumerated() where index != shard {
            let open = counts.open.load(ordering: .relaxed)
            if open > most {
                most = open
                best = index
            }
        }
        return best
    }

    /// A shard other than `shard` with an idle connection, if one has.
    func shardWithIdleConnection(besides shard: Int) -> Int? {
        for (index, counts) in self.shards.enumerated() where index != shard {
            if counts.idle.load(ordering: .relaxed) > 0 { return index }
        }
        return nil
    }

    /// The shard other than `shard` whose oldest waiting request has waited longest, if any waits.
    func shardWithOldestWaiter(besides shard: Int) -> Int? {
        var best: Int? = nil
        var oldest = UInt64.max
        for (index, counts) in self.shards.enumerated() where index != shard {
            let since = counts.oldestWaiting.load(ordering: .relaxed)
            if since != 0, since < oldest, counts.waiting.load(ordering: .relaxed) > 0 {
                oldest = since
                best = index
            }
        }
        return best
    }

    /// The shard a request from outside the loops should go to: the least loaded, counting
    /// its waiting and inbound requests against its idle connections, so a lone request finds
    /// the idle connection and a burst spreads instead of piling onto the one shard that had
    /// one. The chosen shard's inbound count goes up until ``ShardCounts/arrived()``.
    func place() -> Int {
        let start = self.rotation.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        var best = 0
        var lowest = Int.max
        for step in 0..<self.shards.count {
            let index = (start + step) % self.shards.count
            let counts = self.shards[index]
            let load = counts.waiting.load(ordering: .relaxed) + counts.inbound.load(ordering: .relaxed)
                - counts.idle.load(ordering: .relaxed)
            if load < lowest {
                lowest = load
                best = index
            }
        }
        self.shards[best].inbound.add(1, ordering: .relaxed)
        return best
    }
}
