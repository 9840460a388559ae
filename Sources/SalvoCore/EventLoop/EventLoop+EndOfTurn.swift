import Dispatch
import SalvoTransport

/// Work a loop runs once it has handled everything one wake-up brought: every ready socket,
/// every due timer (see ``EventLoop/deferToEndOfTurn(_:)``).
protocol EndOfTurnWork: AnyObject {
    func endOfTurn()
}

extension EndOfTurnWork {
    /// Runs ``endOfTurn()`` at the end of the current turn of this thread's loop, or at once
    /// on a thread that is no loop's (a request its loop refused, failed by its caller).
    func runAtEndOfTurn() {
        if let loop = EventLoop.current {
            loop.deferToEndOfTurn(self)
        } else {
            self.endOfTurn()
        }
    }
}

/// Callers awaiting a response on Swift's global executor, whose responses (or streamed
/// responses' heads) completed in one turn of a loop. Loop-confined.
struct PoolResumes {
    enum Resume: Sendable {
        case collected(UnsafeContinuation<Result<CollectedResponse, TransportError>, Never>, Result<CollectedResponse, TransportError>)
        case streamed(UnsafeContinuation<Result<TransportResponse, TransportError>, Never>,
                      Result<TransportResponse, TransportError>)
        /// A prepared call's caller, its result held by the call.
        case lent(LentSink)

        func run() {
            switch self {
            case .collected(let continuation, let result): continuation.resume(returning: result)
            case .streamed(let continuation, let result): continuation.resume(returning: result)
            case .lent(let call): call.resumeCaller()
            }
        }
    }

    private(set) var waiting: [Resume] = []
    /// The highest priority among the waiting callers: the job that resumes them runs at it,
    /// so that no caller waits behind work of a lower priority than its own.
    private var highest = TaskPriority.background
    /// How many batches went to the pool as one job (for tests).
    private(set) var batches = 0

    mutating func add(_ resume: Resume, priority: TaskPriority) {
        self.waiting.append(resume)
        self.highest = max(self.highest, priority)
    }

    /// Resumes the waiting callers here and now.
    mutating func resumeAll() {
        for resume in self.waiting { resume.run() }
        self.waiting.removeAll(keepingCapacity: true)
        self.highest = .background
    }

    /// Hands the waiting callers to one job of the pool's, at their highest priority.
    mutating func handAllToPool() {
        let batch = self.waiting
        let quality = Self.quality(of: self.highest)
        self.waiting = []
        self.waiting.reserveCapacity(batch.count)
        self.highest = .background
        self.batches += 1
        let handOff = ThreadSanitizerHandOff()
        DispatchQueue.global(qos: quality).async {
            handOff.received()
            for resume in batch { resume.run() }
        }
    }

    /// Dispatch's class for a task priority, as Swift's global executor maps them.
    static func quality(of priority: TaskPriority) -> DispatchQoS.QoSClass {
        switch priority.rawValue {
        case TaskPriority.high.rawValue...: .userInitiated
        case TaskPriority.medium.rawValue...: .default
        case TaskPriority.low.rawValue...: .utility
        default: .background
        }
    }
}

/// How an awaiting caller is resumed: by a job of Swift's pool, with the others of its turn,
/// when it awaits on the global executor (no actor, no loop of ours); else from the loop.
struct CallerResumption {
    /// The caller's priority when it awaits on the global executor; nil: from the loop.
    private var poolPriority: TaskPriority?

    /// A caller resumed from the loop (until ``init(isolation:)`` says otherwise).
    init() {}

    /// Decided on the caller's executor as it starts to wait; `isolation`: its actor, if any.
    init(isolation: (any Actor)?) {
        if isolation == nil && EventLoop.current == nil { self.poolPriority = Task.currentPriority }
    }

    /// Resumes the caller (on the loop thread that completed its request).
    func resume(_ resume: PoolResumes.Resume) {
        if let priority = self.poolPriority, let loop = EventLoop.current {
            loop.resume(fromPool: resume, priority: priority)
        } else {
            resume.run()
        }
    }
}

extension EventLoop {
    /// Resumes an awaiting caller on Swift's global executor (no actor, no loop of ours)
    /// — together with the others of this turn, by one job of the pool's at the highest of
    /// their priorities.
    ///
    /// Resumed from the loop, each caller is a job handed to the pool from outside it: a
    /// worker is woken for it and, on a busy core, takes the CPU from the loop there and
    /// then, runs that one caller to its next request, and sleeps again — two context
    /// switches per request, however many completed together. Resumed from a job of the
    /// pool's, the callers are queued by a worker that is already running, which goes on to
    /// run them one after another (`salvo bench --api async` on one core, c=16 and 64:
    /// 1.05 and 0.87 switches per request before, 0.28 and 0.10 after; 7–14% more requests
    /// per second at c=16 to 256). This relies on dispatch's global queues and Swift's global
    /// executor sharing their threads, as they do on Linux; a program that replaces the
    /// global executor gets its callers resumed correctly, a hop later. A single caller is
    /// resumed at once: a job for it would be one more hand-off. Outside the end of a turn
    /// (a loop that is stopping), at once too. Loop thread only.
    func resume(fromPool resume: PoolResumes.Resume, priority: TaskPriority) {
        self.assertInLoop()
        if self.isRunningEndOfTurn {
            self.poolResumes.add(resume, priority: priority)
        } else {
            resume.run()
        }
    }

    /// Resumes the callers gathered in this turn's deferred work (see above): by one job of
    /// the pool's, or (`inOneJob` false, or only one) here and now.
    func resumePoolCallers(inOneJob: Bool) {
        self.assertInLoop()
        switch self.poolResumes.waiting.count {
        case 0: return
        case 1: self.poolResumes.resumeAll()
        default: if inOneJob { self.poolResumes.handAllToPool() } else { self.poolResumes.resumeAll() }
        }
    }
}
