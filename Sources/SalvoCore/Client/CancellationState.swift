import SalvoTransport
import Synchronization

/// Links a caller's cancellation (a cancelled task, a ``RequestHandle``, a dropped body) to a
/// request that lives on a loop — on whichever loop it is now: a request waiting for a
/// connection may move to another loop's pool that has one idle (``PoolCoordinator``).
///
/// Where the request is, whether it is on its way between loops, and whether the caller
/// cancelled, are kept behind a lock; the request itself (`task`) is touched only by work
/// that runs on the loop the lock names, after checking the request is still there. A request
/// on its way belongs to no loop: a cancellation then only sets the flag, which the request
/// reads when it arrives (``arrived(in:)``).
///
/// @unchecked Sendable: `task` is read and written only on the loop that holds the request
/// (see above), or — in `finished()` — on a caller's thread when the loop had stopped before
/// it ever saw the request; everything else is behind the lock. A subclass (the request's
/// task, which is its own handle when it collects its response: one object per request)
/// keeps to the same rule: its own state is written on the caller's thread only before the
/// request is handed to its loop, and after that on the loop's thread only.
class CancellationState: @unchecked Sendable {
    private struct Place {
        /// The pool the request is in; strong, so a handle outliving its client stays safe.
        var pool: LoopBound<ConnectionPool>
        var moving = false
        var cancelled = false
    }

    private let place: Mutex<Place>
    private var task: RequestTask?

    init(loop: EventLoop, client: HTTPClient) {
        self.place = Mutex(Place(pool: LoopBound(client.poolReference(on: loop), loop: loop)))
    }

    /// The loop the request is on (or left, while it moves).
    final var loop: EventLoop { self.place.withLock { $0.pool.loop } }

    /// Whether the caller cancelled.
    final var isCancelled: Bool { self.place.withLock { $0.cancelled } }

    /// Records the started task; returns true when cancellation came first.
    final func markStarted(_ task: RequestTask) -> Bool {
        self.task = task
        task.cancellation = self
        return self.isCancelled
    }

    /// The request leaves its loop for another (called on the loop it leaves).
    final func beginMove() {
        self.place.withLock { $0.moving = true }
    }

    /// The request is in `pool` now (called on that pool's loop, or on the loop it left when
    /// the move failed). Returns true when the caller cancelled meanwhile.
    final func arrived(in pool: ConnectionPool) -> Bool {
        let bound = LoopBound(pool, loop: pool.loop)
        return self.place.withLock { place in
            place.moving = false
            place.pool = bound
            return place.cancelled
        }
    }

    /// Cancels from any thread.
    final func cancel() {
        let pool = self.place.withLock { place -> LoopBound<ConnectionPool>? in
            place.cancelled = true
            // On its way: the request sees the flag when it arrives.
            return place.moving ? nil : place.pool
        }
        guard let pool else { return }
        self.run(on: pool) { state, pool in
            if let task = state.task {
                pool.cancel(task, error: .cancelled(.caller, phase: task.waitingPhase))
                state.task = nil
            }
        }
    }

    /// Resumes a paused response stream, from any thread. (A request on its way between
    /// loops waits for a connection: it has no stream to resume.)
    final func resumeReading() {
        guard let pool = self.place.withLock({ $0.moving ? nil : $0.pool }) else { return }
        self.run(on: pool) { state, _ in state.task?.resumeReadingOnLoop() }
    }

    /// Runs `work` on `pool`'s loop if the request is still there when it runs; follows the
    /// request if it moved meanwhile, and drops the work while it is on its way.
    private final func run(on pool: LoopBound<ConnectionPool>, _ work: @escaping @Sendable (CancellationState, ConnectionPool) -> Void) {
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

    /// Forgets the task once it ended, so the handle does not keep it alive. On the loop,
    /// or on the caller's thread when the loop had already stopped and never saw the task.
    final func finished() {
        self.task = nil
    }
}
