import Synchronization

/// One piece of work that several callers wait for — a shared exchange, a token refresh —
/// each of whom may stop waiting on its own: a cancelled caller gets `cancellation` at once,
/// a caller whose deadline comes gets its timeout error, the others keep waiting. With
/// `stopsWhenAbandoned`, the work is cancelled when every caller has left before it ended.
final class SharedWork<Value: Sendable>: Sendable {
    private struct State {
        var outcome: Result<Value, ClientError>?
        var waiters: [UInt64: CheckedContinuation<Result<Value, ClientError>, Never>] = [:]
        /// Callers that left before their continuation was registered, and why.
        var left: [UInt64: ClientError] = [:]
        var tickets: UInt64 = 0
        var task: Task<Void, Never>?
        var abandoned = false
    }

    private let state = Mutex(State())
    private let cancellation: ClientError
    private let stopsWhenAbandoned: Bool

    init(cancellation: ClientError, stopsWhenAbandoned: Bool) {
        self.cancellation = cancellation
        self.stopsWhenAbandoned = stopsWhenAbandoned
    }

    /// Every caller left and the work was cancelled for that.
    var wasAbandoned: Bool { self.state.withLock { $0.abandoned } }

    /// How many callers wait for the outcome now.
    var waiting: Int { self.state.withLock { $0.waiters.count } }

    /// Runs `work` in a task of its own; its outcome goes to every caller waiting then or later.
    func start(_ work: @escaping @Sendable () async -> Result<Value, ClientError>) {
        let task = Task {
            let outcome = await work()
            let waiters = self.state.withLock { state in
                state.outcome = outcome
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume(returning: outcome) }
        }
        self.state.withLock { $0.task = task }
    }

    /// The work's outcome; `cancellation` as soon as the calling task is cancelled; `timeout`
    /// when `end` comes first.
    func wait(until end: ContinuousClock.Instant? = nil, timeout: ClientError? = nil) async -> Result<Value, ClientError> {
        let ticket = self.state.withLock { state in
            state.tickets += 1
            return state.tickets
        }
        let timer = end.map { end in
            Task { [self] in
                do { try await Task.sleep(until: end, clock: .continuous) } catch { return }
                self.leave(ticket, with: timeout ?? self.cancellation)
            }
        }
        defer { timer?.cancel(); threadSanitizerSawResume() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, ClientError>, Never>) in
                let ready: Result<Value, ClientError>? = self.state.withLock { state in
                    if let outcome = state.outcome { return outcome }
                    if let reason = state.left.removeValue(forKey: ticket) { return .failure(reason) }
                    state.waiters[ticket] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            self.leave(ticket, with: self.cancellation)
        }
    }

    /// The caller with `ticket` stops waiting, told `reason` (once: a caller already answered
    /// is not answered again).
    private func leave(_ ticket: UInt64, with reason: ClientError) {
        let (waiter, abandoned) = self.state.withLock { state in
            let waiter = state.waiters.removeValue(forKey: ticket)
            if waiter == nil, state.outcome == nil, state.left[ticket] == nil { state.left[ticket] = reason }
            let abandon = self.stopsWhenAbandoned && state.outcome == nil && state.waiters.isEmpty
            if abandon { state.abandoned = true }
            return (waiter, abandon ? state.task : nil)
        }
        waiter?.resume(returning: .failure(reason))
        abandoned?.cancel()
    }
}
