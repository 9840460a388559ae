import Synchronization
import Testing
@_spi(Benchmarks) @testable import SalvoCore

@Suite struct PoolStateMachineTests {
    @Test func firstRequestConnectsThenLeases() {
        var pool = PoolStateMachine(maxConnections: 2)
        let r1 = pool.request(1)
        #expect(r1 == .connect)
        #expect(pool.connecting == 1)
        let r2 = pool.connected(100)
        #expect(r2 == .lease(connection: 100, waiter: 1))
        #expect(pool.leased == 1)
        let r3 = pool.released(100, reusable: true)
        #expect(r3 == .park(connection: 100))
        #expect(pool.idle == [100])
        let r4 = pool.request(2)
        #expect(r4 == .lease(connection: 100, waiter: 2))
    }

    @Test func limitQueuesAndServesInOrder() {
        var pool = PoolStateMachine(maxConnections: 1)
        let r5 = pool.request(1)
        #expect(r5 == .connect)
        let r6 = pool.request(2)
        #expect(r6 == .none)
        let r7 = pool.request(3)
        #expect(r7 == .none)
        let r8 = pool.connected(7)
        #expect(r8 == .lease(connection: 7, waiter: 1))
        let r9 = pool.released(7, reusable: true)
        #expect(r9 == .lease(connection: 7, waiter: 2))
        let r10 = pool.released(7, reusable: true)
        #expect(r10 == .lease(connection: 7, waiter: 3))
        let r11 = pool.released(7, reusable: true)
        #expect(r11 == .park(connection: 7))
        #expect(pool.total == 1)
    }

    @Test func unreusableConnectionIsReplacedForWaiters() {
        var pool = PoolStateMachine(maxConnections: 1)
        _ = pool.request(1)
        _ = pool.request(2)
        _ = pool.connected(7)
        let r12 = pool.released(7, reusable: false)
        #expect(r12 == .connect)
        let r13 = pool.connected(8)
        #expect(r13 == .lease(connection: 8, waiter: 2))
        let r14 = pool.released(8, reusable: false)
        #expect(r14 == .none)
        #expect(pool.total == 0)
    }

    @Test func failedConnectFailsOldestWaiterAndTriesAgain() {
        var pool = PoolStateMachine(maxConnections: 1)
        _ = pool.request(1)
        _ = pool.request(2)
        let r15 = pool.connectFailed()
        #expect(r15 == .fail(waiter: 1, connectAgain: true))
        #expect(pool.connecting == 1)
        let r16 = pool.connectFailed()
        #expect(r16 == .fail(waiter: 2, connectAgain: false))
        #expect(pool.isEmpty)
        var empty = PoolStateMachine(maxConnections: 1)
        _ = empty.request(1)
        _ = empty.removeWaiter(1)
        let r17 = empty.connectFailed()
        #expect(r17 == .none)
    }

    @Test func idleCloseAndWaiterRemoval() {
        var pool = PoolStateMachine(maxConnections: 2)
        _ = pool.request(1)
        _ = pool.connected(5)
        _ = pool.released(5, reusable: true)
        let r18 = pool.idleClosed(5)
        #expect(r18 == .none)
        #expect(pool.total == 0)
        _ = pool.request(2)
        let r19 = pool.removeWaiter(2)
        #expect(r19)
        let r20 = pool.removeWaiter(2)
        #expect(!r20)
        let r21 = pool.connected(6)
        #expect(r21 == .park(connection: 6))
    }

    @Test func freshRequestSkipsIdleAndReplacesWhenFull() {
        var pool = PoolStateMachine(maxConnections: 2)
        _ = pool.request(1); _ = pool.connected(1); _ = pool.released(1, reusable: true)
        let r22 = pool.request(2, fresh: true)
        #expect(r22 == .connect, "room for one more: connect, keep the idle one")
        _ = pool.connected(2)
        _ = pool.released(2, reusable: true)
        #expect(pool.idle == [1, 2])
        var full = PoolStateMachine(maxConnections: 1)
        _ = full.request(1); _ = full.connected(1); _ = full.released(1, reusable: true)
        let r23 = full.request(9, fresh: true)
        #expect(r23 == .replace(closing: 1))
        let r24 = full.connected(3)
        #expect(r24 == .lease(connection: 3, waiter: 9))
    }

    @Test func freshRequestJumpsTheQueue() {
        var pool = PoolStateMachine(maxConnections: 1)
        _ = pool.request(1)
        _ = pool.connected(1)
        _ = pool.request(2)
        let r25 = pool.released(1, reusable: false)
        #expect(r25 == .connect)
        let r26 = pool.request(3, fresh: true)
        #expect(r26 == .none)
        let r27 = pool.connected(4)
        #expect(r27 == .lease(connection: 4, waiter: 3))
    }

    /// A request sent again after a stale connection waits for a new one: a connection coming
    /// back from a request goes to the next waiter that did not ask, or, when every waiter did,
    /// makes room for a new connection.
    @Test func aWaiterThatAskedForANewConnectionIsNotHandedAReusedOne() {
        var pool = PoolStateMachine(maxConnections: 2)
        _ = pool.request(1); _ = pool.connected(1)           // 1 runs on connection 1
        _ = pool.request(2); _ = pool.connected(2)           // 2 runs on connection 2
        let queued = pool.request(3)                          // 3 waits
        let fresh = pool.request(4, fresh: true)              // 4 waits first, for a new one
        #expect(queued == .none && fresh == .none)
        #expect(pool.waiters == [4, 3] && pool.wantsFresh(4) && !pool.wantsFresh(3))
        let room = pool.released(1, reusable: true)
        #expect(room == .replace(closing: 1), "the first connection back makes room for 4")
        let toThree = pool.released(2, reusable: true)
        #expect(toThree == .lease(connection: 2, waiter: 3), "a new one is on its way for 4: the next goes to 3")
        let toFour = pool.connected(7)
        #expect(toFour == .lease(connection: 7, waiter: 4))
        #expect(pool.waiters.isEmpty && pool.freshWaiters.isEmpty)

        var leaving = PoolStateMachine(maxConnections: 1)
        _ = leaving.request(1); _ = leaving.connected(1)
        _ = leaving.request(5, fresh: true)
        let removed = leaving.removeWaiter(5)
        #expect(removed)
        #expect(leaving.freshWaiters.isEmpty, "a waiter that left is forgotten")
        let parked = leaving.released(1, reusable: true)
        #expect(parked == .park(connection: 1))
    }

    /// Found in review: a waiter that asked for a new connection, at the head of the queue,
    /// must not be overtaken forever by later arrivals served on connections coming back.
    @Test func aFreshWaiterKeepsItsTurnUnderSteadyLoad() {
        var pool = PoolStateMachine(maxConnections: 1)
        _ = pool.request(1); _ = pool.connected(1)           // 1 runs on the only connection
        _ = pool.request(2)                                   // 2 waits
        _ = pool.released(1, reusable: true)                  // 1 answered (a 307): its connection goes to 2
        let post = pool.request(3, fresh: true)               // the POST, sent again on a new connection
        #expect(post == .none && pool.waiters == [3])
        _ = pool.request(100)                                 // steady load: one more caller meanwhile
        let back = pool.released(1, reusable: true)
        #expect(back == .replace(closing: 1), "the POST's turn: the connection makes room for a new one")
        let served = pool.connected(9)
        #expect(served == .lease(connection: 9, waiter: 3))
    }

    @Test func shutdown() {
        var pool = PoolStateMachine(maxConnections: 2)
        _ = pool.request(1); _ = pool.connected(1); _ = pool.released(1, reusable: true)
        _ = pool.request(2); _ = pool.request(3); _ = pool.request(4)
        let (idle, waiters) = pool.shutdown()
        #expect(idle == [])
        #expect(waiters == [3, 4])
        let r28 = pool.request(5)
        #expect(r28 == .fail(waiter: 5, connectAgain: false))
        let r29 = pool.released(1, reusable: true)
        #expect(r29 == .none, "nothing is parked after shutdown")
        let r30 = pool.connected(2)
        #expect(r30 == .none)
    }

    @Test func neverExceedsTheLimit() {
        var pool = PoolStateMachine(maxConnections: 3)
        var connects = 0
        for waiter in 0..<50 { if pool.request(waiter) == .connect { connects += 1 } }
        #expect(connects == 3)
        #expect(pool.total == 3)
        #expect(pool.waiters.count == 50)
    }

    // MARK: Sharing the host's budget with other shards

    /// The driver cannot start a connection (the budget is spent elsewhere): the waiter stays,
    /// and connects once the budget has room.
    @Test func declinedConnectKeepsTheWaiterUntilCapacityComes() {
        var pool = PoolStateMachine(maxConnections: 2)
        #expect(pool.request(1) == .connect)
        pool.connectDeclined()
        #expect(pool.connecting == 0)
        #expect(pool.waiters == [1])
        #expect(pool.capacityAvailable() == .connect)
        #expect(pool.connected(10) == .lease(connection: 10, waiter: 1))
        #expect(pool.capacityAvailable() == .none, "nobody waits")
    }

    /// A waiter can leave for another shard that has an idle connection.
    @Test func theOldestWaiterCanMove() {
        var pool = PoolStateMachine(maxConnections: 1)
        #expect(pool.removeOldestWaiter() == nil)
        _ = pool.request(1); _ = pool.request(2); _ = pool.request(3)
        #expect(pool.removeOldestWaiter() == 1, "connecting for it, but the place goes to whoever comes first")
        #expect(pool.waiters == [2, 3])
        #expect(pool.connected(10) == .lease(connection: 10, waiter: 2))
    }

    /// A starved shard gets the connection even though requests wait here too.
    @Test func aStarvedShardComesFirst() {
        var pool = PoolStateMachine(maxConnections: 1)
        _ = pool.request(1); _ = pool.request(2)
        _ = pool.connected(10)
        #expect(pool.released(10, reusable: true, demand: .starved) == .close(connection: 10))
        #expect(pool.waiters == [2], "this shard's waiter stays queued")
        #expect(pool.capacityAvailable() == .connect, "and connects when a place comes back")
        _ = pool.connected(11)
        #expect(pool.released(11, reusable: true, demand: .none) == .park(connection: 11))
    }
}

@Suite struct HostBudgetTests {
    final class Counters: Sendable {
        let peak = Atomic<Int>(0)
        let held = Atomic<Int>(0)
    }

    @Test func neverMoreThanTheLimit() async {
        let budget = HostBudget(limit: 3, loops: 2)
        let counters = Counters()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<2_000 {
                        guard budget.tryAcquire() else { continue }
                        let now = counters.held.add(1, ordering: .relaxed).newValue
                        counters.peak.max(now, ordering: .relaxed)
                        counters.held.subtract(1, ordering: .relaxed)
                        budget.release()
                    }
                }
            }
        }
        #expect(counters.peak.load(ordering: .relaxed) <= 3)
        #expect(budget.openConnections == 0)
        // The budget's own high-water mark: never past the limit.
        #expect((1...3).contains(budget.peakOpenConnections))
    }

    @Test func demandIsAFairShare() {
        let budget = HostBudget(limit: 8, loops: 2)
        let queued = Deadline(nanoseconds: 1_000_000_000)
        let later = queued + .milliseconds(50)
        let mine = queued.nanoseconds + 1  // this shard's oldest request came just after
        #expect(budget.demand(besides: 0, open: 8, oldestWaiting: mine, now: later) == .none, "nobody else waits")
        budget.publish(shard: 1, idle: 0, waiting: 5, open: 1, oldestWaiting: queued)
        #expect(budget.demand(besides: 0, open: 7, oldestWaiting: mine, now: queued + .milliseconds(1)) == .none,
                "a request that just queued is served by its own shard in a moment")
        #expect(budget.demand(besides: 0, open: 7, oldestWaiting: mine, now: later) == .starved, "1 of a share of 4, against 7")
        #expect(budget.demand(besides: 0, open: 4, oldestWaiting: mine, now: later) == .none, "this shard is at its share")
        budget.publish(shard: 1, idle: 0, waiting: 5, open: 3, oldestWaiting: queued)
        #expect(budget.demand(besides: 0, open: 5, oldestWaiting: mine, now: later) == .none, "3 against 5: close enough, no churn")
        budget.publish(shard: 1, idle: 0, waiting: 5, open: 1, oldestWaiting: queued)
        #expect(budget.demand(besides: 0, open: 7, oldestWaiting: 0, now: later) == .none,
                "nobody waits here: the connection stays, idle, and the waiting request moves to it")
    }

    /// A limit smaller than the number of busy loops: requests of a loop with no connection go
    /// to wait where connections are.
    @Test func requestsOfALoopWithoutConnectionsGoWhereConnectionsAre() {
        let budget = HostBudget(limit: 2, loops: 3)
        #expect(budget.shardWithMostConnections(besides: 0) == nil)
        budget.publish(shard: 1, idle: 0, waiting: 4, open: 1, oldestWaiting: Deadline(nanoseconds: 5))
        budget.publish(shard: 2, idle: 0, waiting: 1, open: 1, oldestWaiting: Deadline(nanoseconds: 5))
        #expect(budget.shardWithMostConnections(besides: 0) != nil)
        budget.publish(shard: 2, idle: 0, waiting: 1, open: 0, oldestWaiting: Deadline(nanoseconds: 5))
        #expect(budget.shardWithMostConnections(besides: 0) == 1)
        #expect(budget.shardWithMostConnections(besides: 1) == nil)
    }

    @Test func placementSpreadsABurstAndFindsIdleConnections() {
        let budget = HostBudget(limit: 8, loops: 2)
        var counts = [0, 0]
        for _ in 0..<100 { counts[budget.place()] += 1 }
        #expect(counts == [50, 50], "inbound requests count as load")
        for shard in 0..<2 { for _ in 0..<50 { budget.shards[shard].arrived() } }
        budget.publish(shard: 1, idle: 1, waiting: 0, open: 1, oldestWaiting: nil)
        #expect(budget.place() == 1, "the idle connection")
        #expect(budget.shardWithIdleConnection(besides: 1) == nil)
        #expect(budget.shardWithIdleConnection(besides: 0) == 1)
        // A fair share while another shard has requests coming: the limit split, rounded up.
        #expect(budget.mayConnect(shard: 0, open: 3), "shard 1 has inbound requests: a share of 4")
        for _ in 0..<4 { #expect(budget.tryAcquire()) }
        budget.publish(shard: 1, idle: 0, waiting: 3, open: 0, oldestWaiting: nil)
        #expect(!budget.mayConnect(shard: 0, open: 4), "shard 1 still needs up to its share of 4")
        budget.publish(shard: 1, idle: 0, waiting: 0, open: 0, oldestWaiting: nil)
        #expect(budget.mayConnect(shard: 0, open: 4), "shard 1 needs one (its inbound request): three places are free")
        for _ in 0..<4 { budget.release() }
        budget.shards[1].arrived()
        budget.publish(shard: 1, idle: 0, waiting: 0, open: 1, oldestWaiting: nil)
        #expect(budget.mayConnect(shard: 0, open: 7), "nobody else wants any: all of it")
    }
}
