import SalvoTransport
import Synchronization

/// Where a request is, as its caller's thread sees it: the pool it is in, whether it is on its
/// way between loops, and whether the caller cancelled. Behind the owner's lock.
struct RemotePlace {
    /// The pool the request is in; strong, so a handle outliving its client stays safe.
    var pool: LoopBound<PoolShard>
    var moving = false
    var cancelled = false
    /// Which of the owner's calls this is: a prepared call's owner is used again for later
    /// calls (``OwnerRecycler``), and a handle kept from an earlier one must not reach them.
    var generation: UInt32 = 0
}

/// How other threads reach the owner: the caller cancels (a cancelled task, a
/// ``RequestHandle``, a dropped body) or asks a paused stream for more, on whichever loop the
/// request is now — a request waiting for a connection may move to another loop's pool that
/// has one idle (``PoolCoordinator``). The owner itself is touched only by work that runs on
/// the loop its place names, after checking it is still there; a request on its way between
/// loops belongs to no loop, and a cancellation then only sets the flag, which it reads when
/// it arrives (``arrived(in:)``).
extension RequestOwner {
    /// The loop the request is on (or left, while it moves).
    var loop: EventLoop { self.place.withLock { $0.pool.loop } }

    /// Whether the caller cancelled.
    var isCancelled: Bool { self.place.withLock { $0.cancelled } }

    /// The request leaves its loop for another (called on the loop it leaves).
    func beginMove() {
        self.moving()
        self.place.withLock { $0.moving = true }
    }

    /// The request is in `pool` now (called on that pool's loop, or on the loop it left when
    /// the move failed). Returns true when the caller cancelled meanwhile.
    func arrived(in pool: PoolShard) -> Bool {
        let bound = LoopBound(pool, loop: pool.loop)
        return self.place.withLock { place in
            place.moving = false
            place.pool = bound
            return place.cancelled
        }
    }

    /// Cancels from any thread: the call ends with `.cancelled` unless it ended first.
    /// `generation`: the call the canceller holds a handle to (``RemotePlace/generation``);
    /// nothing happens once the owner has gone on to a later call.
    func cancel(generation: UInt32) {
        let pool = self.place.withLock { place -> LoopBound<PoolShard>? in
            guard place.generation == generation else { return nil }
            place.cancelled = true
            // On its way: the request sees the flag when it arrives.
            return place.moving ? nil : place.pool
        }
        guard let pool else { return }
        self.run(on: pool) { owner, pool in
            guard !owner.isFinished, owner.generation == generation else { return }
            pool.cancel(owner, error: .cancelled(.caller, phase: owner.waitingPhase))
        }
    }

    /// Cancels an owner that serves one call only (every owner but a prepared call's).
    func cancel() {
        self.cancel(generation: 0)
    }

    /// Resumes a paused response stream, from any thread. (A request on its way between
    /// loops waits for a connection: it has no stream to resume.)
    func resumeReading() {
        guard let pool = self.place.withLock({ $0.moving ? nil : $0.pool }) else { return }
        // Also after the response ended on the wire: decoded data may still wait for the caller.
        self.run(on: pool) { owner, _ in owner.resumeReadingOnLoop() }
    }

    /// Runs `work` on `pool`'s loop if the request is still there when it runs; follows the
    /// request if it moved meanwhile, and drops the work while it is on its way.
    private func run(on pool: LoopBound<PoolShard>, _ work: @escaping @Sendable (RequestOwner, PoolShard) -> Void) {
        let body: @Sendable () -> Void = {
            guard let current = self.place.withLock({ $0.moving ? nil : $0.pool }) else { return }
            guard current.loop === pool.loop else {
                self.run(on: current, work)
                return
            }
            work(self, current.value)
        }
        if pool.loop.inEventLoop { body() } else { pool.loop.execute(body) }
    }
}
