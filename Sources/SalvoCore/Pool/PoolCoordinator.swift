import SalvoTransport
import Synchronization

/// What the pool shards of one client share: a ``HostBudget`` per host, and the way from one
/// loop's shard to the others.
///
/// Each loop has its own shard (``PoolShard``), so the request path takes no lock; the
/// shards meet only here, and only off that path: when a host's first connection on a loop is
/// made (its budget is looked up), when a request is placed from outside the loops (to find a
/// shard with an idle connection), and when one shard waits for the host's budget while
/// another could free a place. Messages between shards go through the loops' queues.
final class PoolCoordinator: Sendable {
    let loops: [EventLoop]
    private let limit: Int
    /// Budgets in use, with how many host pools hold each: a host's budget lives as long as
    /// one shard has a pool for it, so two shards never count against two budgets.
    private let budgets = Mutex<[ConnectionKey: (budget: HostBudget, users: Int)]>([:])
    /// The shards, once made (they hold this coordinator: ``detach()`` breaks the cycle).
    private let shards = Mutex<[LoopBound<PoolShard>]>([])

    init(loops: [EventLoop], maxConnectionsPerHost: Int) {
        self.loops = loops
        self.limit = maxConnectionsPerHost
    }

    func attach(_ shards: [LoopBound<PoolShard>]) {
        self.shards.withLock { $0 = shards }
    }

    /// Forgets the shards (the client shut down).
    func detach() {
        self.shards.withLock { $0.removeAll() }
    }

    // MARK: Budgets

    /// The budget of `key`, for a host pool being made.
    func takeBudget(for key: ConnectionKey) -> HostBudget {
        self.budgets.withLock { budgets in
            if let entry = budgets[key] {
                budgets[key] = (entry.budget, entry.users + 1)
                return entry.budget
            }
            let budget = HostBudget(limit: self.limit, loops: self.loops.count)
            budgets[key] = (budget, 1)
            return budget
        }
    }

    /// The most connections `key` had open at once, while its budget lives (nil: none now).
    func peakOpenConnections(for key: ConnectionKey) -> Int? {
        self.budgets.withLock { $0[key]?.budget.peakOpenConnections }
    }

    /// A host pool holding `key`'s budget went away.
    func returnBudget(for key: ConnectionKey) {
        self.budgets.withLock { budgets in
            guard let entry = budgets[key] else { return }
            budgets[key] = entry.users > 1 ? (entry.budget, entry.users - 1) : nil
        }
    }

    /// Where a request for `key` that is not already on a loop should go (see
    /// ``HostBudget/place()``), with the counts to tell when it arrives. The host's budget is
    /// made here if no pool has it yet, so a first burst is spread too.
    func place(_ key: ConnectionKey) -> (loop: EventLoop, arrival: HostBudget.ShardCounts) {
        let budget = self.budgets.withLock { budgets in
            if let entry = budgets[key] { return entry.budget }
            // Held by no pool yet: the first pool made for the host takes it.
            let budget = HostBudget(limit: self.limit, loops: self.loops.count)
            budgets[key] = (budget, 0)
            return budget
        }
        let shard = budget.place()
        return (self.loops[shard], budget.shards[shard])
    }

    /// A request placed for `key` ended before it reached a pool (cancelled first, or its loop
    /// stopped): a budget that placement made for it and no pool took is forgotten.
    func placementAbandoned(_ key: ConnectionKey) {
        self.budgets.withLock { budgets in
            guard let entry = budgets[key], entry.users == 0,
                  entry.budget.shards.allSatisfy({ $0.inbound.load(ordering: .relaxed) <= 0 }) else { return }
            budgets[key] = nil
        }
    }

    // MARK: Between shards

    /// Moves `owner`'s request, waiting in shard `from`, to shard `to`, which has (or had a
    /// moment ago) an idle connection to its host. Its cancellation follows it.
    func move(_ owner: RequestOwner, from: PoolShard, to index: Int, urgent: Bool) {
        owner.beginMove()
        guard let target = self.shards.withLock({ index < $0.count ? $0[index] : nil }) else {
            from.adopt(owner, movable: false, urgent: true)
            return
        }
        let moving = LoopBound(owner, loop: target.loop)
        if !target.loop.tryExecute({ target.value.adopt(moving.value, movable: true, urgent: urgent) }) {
            // That loop stopped meanwhile: the request stays, first in line.
            from.adopt(owner, movable: false, urgent: true)
        }
    }

    /// Shard `requester` has an idle connection to `key` and nobody waiting for it: the shard
    /// whose oldest request has waited longest sends that request over.
    func pullWaiter(_ key: ConnectionKey, budget: HostBudget, to requester: Int) {
        guard let index = budget.shardWithOldestWaiter(besides: requester) else { return }
        self.send(to: index) { $0.sendWaiter(key, to: requester) }
    }

    /// A place in `key`'s budget came free on shard `releaser`: shards with waiting requests
    /// may connect.
    func announceCapacity(_ key: ConnectionKey, budget: HostBudget, from releaser: Int) {
        for (index, counts) in budget.shards.enumerated() where index != releaser && counts.waiting.load(ordering: .relaxed) > 0 {
            self.send(to: index) { $0.capacityAvailable(key) }
        }
    }

    private func send(to index: Int, _ message: @escaping @Sendable (PoolShard) -> Void) {
        guard let shard = self.shards.withLock({ index < $0.count ? $0[index] : nil }) else { return }
        shard.loop.execute { message(shard.value) }
    }
}
