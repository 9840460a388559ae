import Synchronization

/// Links a caller's cancellation (a cancelled task, a ``RequestHandle``, a dropped body) to a
/// request that lives on a loop — on whichever loop it is now: a request waiting for a
/// connection may move to another loop's pool that has one idle (``PoolCoordinator``).
///
/// @unchecked Sendable: `task` and `cancelled` are touched only on the request's current loop
/// (work for it is sent there, and follows it if it moved meanwhile; a request moves after the
/// lock names its new loop, so work queued there runs before or after the request arrives,
/// and `submit` checks `cancelled` on arrival). Where it is, `pool`, is behind a lock, taken
/// only to find the loop. `finished()` may also run on a caller's thread when the loop
/// stopped before it ever saw the request, and so never touches it.
final class CancellationState: @unchecked Sendable {
    /// The pool the request is in now; strong, so a handle outliving its client stays safe.
    private let pool: Mutex<LoopBound<ConnectionPool>>
    private var task: RequestTask?
    private var cancelled = false

    init(loop: EventLoop, client: HTTPClient) {
        self.pool = Mutex(LoopBound(client.poolReference(on: loop), loop: loop))
    }

    /// The loop the request is on now.
    var loop: EventLoop { self.pool.withLock { $0.loop } }

    /// The request moves to `pool` (called on the loop it leaves, before it leaves).
    func moved(to pool: ConnectionPool) {
        let bound = LoopBound(pool, loop: pool.loop)
        self.pool.withLock { $0 = bound }
    }

    /// Whether the caller cancelled (read on the request's current loop).
    var isCancelled: Bool { self.cancelled }

    /// Records the started task; returns true when cancellation came first.
    func markStarted(_ task: RequestTask) -> Bool {
        self.task = task
        task.cancellation = self
        return self.cancelled
    }

    /// Cancels from any thread.
    func cancel() {
        self.onCurrentLoop { state, pool in
            state.cancelled = true
            if let task = state.task {
                pool.cancel(task, error: HTTPClientError(.cancelled))
                state.task = nil
            }
        }
    }

    /// Resumes a paused response stream, from any thread.
    func resumeReading() {
        self.onCurrentLoop { state, _ in state.task?.resumeReading() }
    }

    /// Runs `work` on the request's loop with its pool; if the request moved while the work
    /// travelled, the work follows it.
    private func onCurrentLoop(_ work: @escaping @Sendable (CancellationState, ConnectionPool) -> Void) {
        let pool = self.pool.withLock { $0 }
        let run: @Sendable () -> Void = {
            let current = self.pool.withLock { $0 }
            guard current.loop === pool.loop else {
                self.onCurrentLoop(work)
                return
            }
            work(self, current.value)
        }
        if pool.loop.inEventLoop { run() } else { pool.loop.execute(run) }
    }

    /// Forgets the task once it ended, so the handle does not keep it alive. On the loop,
    /// or on the caller's thread when the loop had already stopped and never saw the task.
    func finished() {
        self.task = nil
    }
}
