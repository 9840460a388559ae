import SalvoTransport
import CSalvo
import DequeModule
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Something registered with a loop's epoll: a connection, the wake-up eventfd.
package protocol Selectable: AnyObject {
    /// Called on the loop thread with the ready epoll event mask.
    func ready(events: UInt32)
}

/// One thread running epoll: it owns every connection registered with it, its timers and a
/// queue of work handed over by other threads.
///
/// Everything about a connection is touched only on its loop's thread, so the per-request
/// path takes no locks. Other threads reach a loop through ``execute(_:)``, which appends to a
/// locked queue and writes the loop's eventfd only when the loop is (or is about to be)
/// asleep in `epoll_wait`.
public final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: the fields below the "loop-confined" mark are touched only on the
    // loop thread (checked by `assertInLoop` in debug builds); the cross-thread fields are a
    // Mutex and atomics.

    /// The loop's position in its group (0-based).
    public let index: Int

    // Cross-thread state. `Pending.closed` is set once the loop has run its last work.
    private struct Pending: ~Copyable {
        var queue = Deque<Work>()
        var closed = false
        /// Run on the loop's thread once it has stopped taking work (see ``whenStopping(_:)``).
        var stopHooks: [Int: @Sendable () -> Void] = [:]
        var nextHookID = 1
    }

    /// Something to run on the loop: a closure, or a Swift task's job (the loop is a
    /// `TaskExecutor`).
    private enum Work {
        case closure(@Sendable () -> Void)
        case job(UnownedJob)
    }
    private let pending = Mutex<Pending>(Pending())
    private let sleeping = Atomic<Bool>(false)
    private let wakeupSignalled = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)
    private let wakeFD: Int32
    private var thread: pthread_t? = nil
    private let threadStarted = Atomic<Bool>(false)

    // Loop-confined state: `@exclusivity(unchecked)`, as the engine's other loop-confined
    // objects — one thread touches it, and no access spans a call that could reach it again.
    @exclusivity(unchecked) private var epoll: Epoll
    @exclusivity(unchecked) private var slots: [(any Selectable)?] = [nil]
    @exclusivity(unchecked) private var generations: [UInt32] = [0]
    @exclusivity(unchecked) private var freeSlots: [Int] = []
    @exclusivity(unchecked) private var timers = TimerHeap()
    @exclusivity(unchecked) private var compactTimersAt = 32
    @exclusivity(unchecked) private var running: Deque<Work> = Deque()
    /// Jobs enqueued from the loop's own thread: no lock, no wake-up.
    @exclusivity(unchecked) private var localJobs: Deque<UnownedJob> = Deque()
    /// Work held until the loop has handled everything one wake-up brought (see
    /// ``deferToEndOfTurn(_:)``), and the batch being run.
    @exclusivity(unchecked) private var endOfTurn: [any EndOfTurnWork] = []
    @exclusivity(unchecked) private var endOfTurnRunning: [any EndOfTurnWork] = []
    /// Awaiting callers on Swift's global executor whose responses completed this turn,
    /// resumed together by one job of that pool (see ``resume(fromPool:priority:)``).
    @exclusivity(unchecked) var poolResumes = PoolResumes()
    /// The work deferred to the end of a turn is running (callers may be batched for the pool).
    @exclusivity(unchecked) private(set) var isRunningEndOfTurn = false
    @exclusivity(unchecked) private var nowCache = Deadline.now()
    /// The loop has stopped taking work and runs its stop hooks: jobs go elsewhere now.
    @exclusivity(unchecked) private var stopping = false
    /// Buffer shared by every connection on this loop for reads: data is parsed in place
    /// before the next read, so one per loop is enough.
    package let readBuffer: UnsafeMutableRawBufferPointer
    /// Buffer shared by this loop's TLS connections to put a small request's head and body
    /// side by side, so that one `SSL_write` seals them in one record (see
    /// ``Socket/write(_:_:joiningIn:)``). OpenSSL has encrypted the bytes before that call
    /// returns, so the next connection may fill it at once.
    package let recordBuffer: UnsafeMutableRawBufferPointer
    /// Loop-local state that higher layers hang on the loop (the connection pool shard).
    @exclusivity(unchecked) var attachments: [ObjectIdentifier: AnyObject] = [:]

    init(index: Int, readBufferSize: Int = 64 * 1024) throws(SystemError) {
        self.index = index
        self.epoll = try Epoll()
        let fd = eventfd(0, salvo_EFD_NONBLOCK_CLOEXEC)
        guard fd >= 0 else { throw SystemError(call: "eventfd", errno: salvo_errno()) }
        self.wakeFD = fd
        self.readBuffer = .allocate(byteCount: readBufferSize, alignment: 16)
        self.recordBuffer = .allocate(byteCount: TLSSession.maxRecordPlaintext, alignment: 16)
        try self.epoll.add(fd, interest: .read, token: 0)
    }

    deinit {
        SystemCall.close(self.wakeFD)
        self.readBuffer.deallocate()
        self.recordBuffer.deallocate()
    }

    // MARK: Threads

    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The loop whose thread is running this code, if any.
    public static var current: EventLoop? {
        guard let raw = pthread_getspecific(EventLoop.currentKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue()
    }

    /// True when called on this loop's own thread.
    public var inEventLoop: Bool {
        pthread_getspecific(EventLoop.currentKey) == Unmanaged.passUnretained(self).toOpaque()
    }

    @inline(__always)
    package func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(self.inEventLoop, "touched off its event loop thread", file: file, line: line)
    }

    func start(name: String) throws(SystemError) {
        self.threadName = name
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { raw in
            let loop = Unmanaged<EventLoop>.fromOpaque(raw!).takeRetainedValue()
            loop.run()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            throw SystemError(call: "pthread_create", errno: rc)
        }
        self.thread = tid
        self.threadStarted.store(true, ordering: .releasing)
    }

    /// Asks the loop to stop after the work already queued, and waits for its thread to end.
    /// Must not be called on the loop's own thread.
    func stopAndJoin() {
        precondition(!self.inEventLoop, "an event loop cannot join itself")
        self.stopRequested.store(true, ordering: .sequentiallyConsistent)
        self.wake()
        if let thread = self.thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    // MARK: Cross-thread work

    /// Runs `work` on the loop thread, soon. Safe from any thread. Work handed to a loop
    /// that has stopped is dropped: use ``tryExecute(_:)`` to know.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        _ = self.tryExecute(work)
    }

    /// Runs `work` on the loop thread, soon, and returns true; returns false (and never runs
    /// it) when the loop has stopped. Safe from any thread.
    @discardableResult
    public func tryExecute(_ work: @escaping @Sendable () -> Void) -> Bool {
        self.enqueueWork(.closure(work))
    }

    private func enqueueWork(_ work: consuming Work) -> Bool {
        let accepted = self.pending.withLock { pending -> Bool in
            if pending.closed { return false }
            pending.queue.append(work)
            return true
        }
        // Only a loop that sleeps (or is about to) needs the eventfd: the flag is set before
        // the loop's last look at the queue, so either it sees this work or we see the flag.
        if accepted && self.sleeping.load(ordering: .sequentiallyConsistent) {
            self.wake()
        }
        return accepted
    }

    private func wake() {
        if self.wakeupSignalled.exchange(true, ordering: .acquiringAndReleasing) { return }
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(self.wakeFD, $0.baseAddress, 8) }
    }

    // MARK: Stopping

    /// Runs `hook` on the loop's thread when the loop stops, after the last work it accepted,
    /// so that whatever lives on the loop (connections, their requests) can end instead of
    /// being abandoned. Returns an id for ``removeStopHook(_:)``, or nil when the loop has
    /// already stopped (and the hook will never run). Safe from any thread.
    package func whenStopping(_ hook: @escaping @Sendable () -> Void) -> Int? {
        self.pending.withLock { pending -> Int? in
            if pending.closed { return nil }
            let id = pending.nextHookID
            pending.nextHookID += 1
            pending.stopHooks[id] = hook
            return id
        }
    }

    /// Forgets a hook registered with ``whenStopping(_:)``. Safe from any thread.
    package func removeStopHook(_ id: Int) {
        _ = self.pending.withLock { $0.stopHooks.removeValue(forKey: id) }
    }

    /// Runs `work` once this turn of the loop is over, before the loop runs its queued jobs
    /// and waits again; at once if the loop has stopped taking work. Loop thread only.
    ///
    /// For waking callers: a loop that resumes each awaiting task as its response completes
    /// hands Swift's thread pool one task at a time, and on a busy machine the woken worker
    /// takes the CPU from the loop each time — two context switches per request. Resumed
    /// together at the end of the turn, the tasks run as one batch (0.7 switches per request
    /// instead of 1.5, `salvo bench --api async` c=64 on one core, when this came in), a few
    /// microseconds later. Callers on Swift's global executor are then resumed by one job of
    /// the pool's own, not one by one from the loop (see ``resume(fromPool:priority:)``).
    func deferToEndOfTurn(_ work: any EndOfTurnWork) {
        self.assertInLoop()
        if self.stopping {
            work.endOfTurn()
        } else {
            self.endOfTurn.append(work)
        }
    }

    /// Runs the work deferred to the end of this turn, in the order it came; work deferred
    /// meanwhile waits for the next turn. `handingCallersToPool`: false when the callers it
    /// resumes must be resumed before this returns (shutting down), not by a job of the
    /// pool's a moment later. Loop thread only.
    func runEndOfTurn(handingCallersToPool: Bool = true) {
        self.assertInLoop()
        guard !self.endOfTurn.isEmpty else { return }
        swap(&self.endOfTurn, &self.endOfTurnRunning)
        self.isRunningEndOfTurn = true
        for work in self.endOfTurnRunning { work.endOfTurn() }
        self.isRunningEndOfTurn = false
        self.endOfTurnRunning.removeAll(keepingCapacity: true)
        self.resumePoolCallers(inOneJob: handingCallersToPool)
    }

    /// Runs the stop hooks once no more work is accepted. What they resume must not wait
    /// for this loop: jobs that would run on it go to the global executor from here on, and
    /// work deferred to the end of a turn runs at once, as the loop has no more turns.
    private func runStopHooks() {
        // Until none is left: work run here may defer more.
        repeat { self.runEndOfTurn(handingCallersToPool: false) } while !self.endOfTurn.isEmpty
        self.stopping = true
        let hooks = self.pending.withLock { pending -> [@Sendable () -> Void] in
            let hooks = pending.stopHooks.sorted { $0.key < $1.key }.map(\.value)
            pending.stopHooks.removeAll()
            return hooks
        }
        for hook in hooks { hook() }
        while let job = self.localJobs.popFirst() {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    // MARK: Registration (loop thread only)

    /// Registers `selectable` for `fd` and returns its token.
    package func register(_ fd: Int32, _ selectable: any Selectable, interest: IOInterest) throws(SystemError) -> UInt64 {
        self.assertInLoop()
        let slot: Int
        if let free = self.freeSlots.popLast() {
            slot = free
            self.slots[slot] = selectable
        } else {
            slot = self.slots.count
            self.slots.append(selectable)
            self.generations.append(0)
        }
        let token = UInt64(self.generations[slot]) << 32 | UInt64(slot)
        do {
            try self.epoll.add(fd, interest: interest, token: token)
        } catch {
            self.release(slot: slot)
            throw error
        }
        return token
    }

    package func reregister(_ fd: Int32, token: UInt64, interest: IOInterest) throws(SystemError) {
        try self.epoll.modify(fd, interest: interest, token: token)
    }

    /// Removes `fd` from epoll and frees its slot; events still in flight for it are dropped.
    /// Call before closing the descriptor.
    package func deregister(_ fd: Int32, token: UInt64) {
        self.assertInLoop()
        self.epoll.remove(fd)
        let slot = Int(token & 0xFFFF_FFFF)
        guard slot < self.slots.count, UInt64(self.generations[slot]) == token >> 32 else { return }
        self.release(slot: slot)
    }

    private func release(slot: Int) {
        self.slots[slot] = nil
        self.generations[slot] &+= 1
        self.freeSlots.append(slot)
    }

    // MARK: Timers (loop thread only)

    /// The loop's clock, read once per loop iteration (and refreshed by ``refreshNow()``).
    package var now: Deadline { self.nowCache }

    @discardableResult
    package func refreshNow() -> Deadline {
        self.nowCache = .now()
        return self.nowCache
    }

    /// Calls `target.timerFired(token:)` at `deadline`. Timers are not cancelled: the target
    /// ignores a token that is no longer current.
    package func scheduleTimer(at deadline: Deadline, target: any TimerTarget, token: UInt64) {
        self.assertInLoop()
        guard deadline != .distantFuture else { return }
        self.timers.insert(deadline: deadline, target: target, token: token)
        if self.timers.count >= self.compactTimersAt {
            // Amortized: the heap is rebuilt only each time it doubles past its live size.
            self.timers.removeStale()
            self.compactTimersAt = max(32, self.timers.count * 2)
        }
    }

    /// Runs `work` on the loop after `delay`.
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let deadline = Deadline.now() + delay
        let timer = ClosureTimer(work)
        if self.inEventLoop {
            self.scheduleTimer(at: deadline, target: timer, token: 0)
        } else {
            self.execute { self.scheduleTimer(at: deadline, target: timer, token: 0) }
        }
    }

    // MARK: The loop

    private var threadName = "salvo"

    private func run() {
        salvo_set_thread_name(self.threadName)
        pthread_setspecific(EventLoop.currentKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(EventLoop.currentKey, nil) }
        while true {
            self.runEndOfTurn()
            self.runPending()
            if self.stopRequested.load(ordering: .sequentiallyConsistent) {
                // Finish work queued before the stop, refuse any after it, let what lives on
                // the loop end, then leave.
                self.runPending()
                self.pending.withLock { $0.closed = true }
                self.runPending()
                self.runStopHooks()
                break
            }
            var timeout = self.timeoutUntilNextTimer()
            self.sleeping.store(true, ordering: .sequentiallyConsistent)
            if !self.localJobs.isEmpty || !self.endOfTurn.isEmpty || self.hasPendingWork()
                || self.stopRequested.load(ordering: .sequentiallyConsistent) { timeout = 0 }
            let ready: Int
            do {
                ready = try self.epoll.wait(timeoutMilliseconds: timeout)
            } catch {
                // epoll_wait fails only on a programming error (EBADF, EINVAL); nothing to recover.
                fatalError("salvo event loop: \(error)")
            }
            self.sleeping.store(false, ordering: .sequentiallyConsistent)
            self.refreshNow()
            for i in 0..<ready {
                let (events, token) = self.epoll.event(at: i)
                if token == 0 {
                    self.drainWakeFD()
                    continue
                }
                let slot = Int(token & 0xFFFF_FFFF)
                guard slot < self.slots.count, UInt64(self.generations[slot]) == token >> 32,
                      let selectable = self.slots[slot] else { continue }
                selectable.ready(events: events)
            }
            self.fireTimers()
        }
        self.timers.removeAll()
        self.attachments.removeAll()
    }

    private func hasPendingWork() -> Bool {
        self.pending.withLock { !$0.queue.isEmpty }
    }

    private func runPending() {
        while true {
            self.pending.withLock { pending in
                swap(&pending.queue, &self.running)
            }
            while let job = self.localJobs.popFirst() {
                job.runSynchronously(on: self.asUnownedTaskExecutor())
            }
            if self.running.isEmpty { return }
            while let work = self.running.popFirst() {
                switch work {
                case .closure(let body): body()
                case .job(let job): job.runSynchronously(on: self.asUnownedTaskExecutor())
                }
            }
        }
    }

    private func drainWakeFD() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(self.wakeFD, $0.baseAddress, 8) }
        self.wakeupSignalled.store(false, ordering: .releasing)
    }

    private func timeoutUntilNextTimer() -> Int32 {
        guard let earliest = self.timers.earliest else { return -1 }
        let ns = Deadline.now().nanoseconds(until: earliest)
        // Round up so a timer never fires a little early and spins the loop.
        let ms = (ns + 999_999) / 1_000_000
        return Int32(clamping: ms)
    }

    private func fireTimers() {
        guard !self.timers.isEmpty else { return }
        let now = self.refreshNow()
        while let entry = self.timers.popDue(now: now) {
            entry.target.timerFired(token: entry.token, now: now)
        }
    }
}

/// A one-shot closure timer for ``EventLoop/schedule(after:_:)``.
private final class ClosureTimer: TimerTarget, Sendable {
    let work: @Sendable () -> Void
    init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    func timerFired(token: UInt64, now: Deadline) { self.work() }
}

// MARK: - Running Swift tasks on the loop

/// An event loop runs Swift tasks that prefer it (`Task(executorPreference: loop)` or
/// `withTaskExecutorPreference(loop)`). Such a task calls the client from the loop's own
/// thread, so its requests start without a hop, and it resumes on the loop when the
/// response is complete: a closed loop of requests stays on one thread.
///
/// ```swift
/// let loop = group.loops[0]
/// let task = Task(executorPreference: loop) {
///     for _ in 0..<1000 { _ = try await client.execute(request) }
/// }
/// ```
extension EventLoop: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if self.inEventLoop && !self.stopping {
            self.localJobs.append(unowned)
        } else if self.inEventLoop || !self.enqueueWork(.job(unowned)) {
            // The loop has stopped; the job must still run somewhere, or its task hangs.
            globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
        }
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
