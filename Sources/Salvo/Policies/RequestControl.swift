import Synchronization

/// Limits on a client's calls while they run — at most so many at once, in all and per host —
/// with the rest waiting in order of priority, then of arrival. With `maxConcurrent: 1` it
/// is a serial queue. (To cancel a call by its id, no middleware is needed: see
/// ``Client/cancel(_:)``; this one can cancel the calls it holds too, waiting ones included.)
///
/// ```swift
/// let control = RequestControl(maxConcurrent: 8, maxPerHost: 4)
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [control]))
/// control.cancelAll()         // every call running or waiting here
/// ```
///
/// A cancelled call — running, waiting for its turn, or cancelled by id before it even got
/// here — ends with `.cancelled`, once; the transport closes or keeps its connection as for
/// any cancelled task. Two calls in flight with the same id: the second is refused
/// (`.invalidRequest`). A streamed call (`stream`, `download`, `events`) holds its place until
/// its response head; its body is the caller's, cancelled with the caller's task. Each running call
/// runs in a task of its own (that is what lets another thread cancel it), which costs a
/// little: install this middleware where you need it. Put it first to count and cancel the
/// whole call (retries included), last to count each attempt.
///
/// A call that waits for a ``TokenAuthorization`` refresh lends its place to that refresh:
/// the refresh's own requests through this control go past its limits while such a call
/// waits (they would otherwise wait behind the calls waiting for them), and queue like any
/// other call when none does. They are counted and can be cancelled like the rest.
public final class RequestControl: Middleware {
    /// Calls running at once, in all (nil: no limit).
    public let maxConcurrent: Int?
    /// Calls running at once to one host (nil: no limit).
    public let maxPerHost: Int?

    private struct Waiter {
        let id: RequestID
        let host: String
        let priority: RequestPriority
        let arrival: UInt64
        /// The token refreshes the call is part of (``TokenAuthorization/refreshing``).
        let refreshes: Set<ObjectIdentifier>
        let continuation: CheckedContinuation<Admission, Never>
    }

    private struct State {
        var running: [RequestID: Task<ClientResponse, any Error>] = [:]
        var admitted: [RequestID: String] = [:]
        var perHost: [String: Int] = [:]
        var waiting: [Waiter] = []
        var arrivals: UInt64 = 0
        /// Ids cancelled before their call got this far.
        var cancelledEarly: Set<RequestID> = []
        /// Ids cancelled before their call arrived at all (the most recent ones, bounded).
        var cancelledBeforeArrival: [RequestID] = []
        /// Places lent to token refreshes, by refresh: how many admitted calls wait for each.
        var lent: [ObjectIdentifier: Int] = [:]
    }

    /// The controls whose places the current task's call holds (this call's, and those of
    /// the calls it runs inside): lent to a token refresh the call waits for.
    @TaskLocal static var placesHeld: [RequestControl] = []

    /// How many cancellations of calls not yet arrived are remembered.
    private static let rememberedCancellations = 1024

    private let state = Mutex(State())

    public init(maxConcurrent: Int? = nil, maxPerHost: Int? = nil) {
        self.maxConcurrent = maxConcurrent.map { Swift.max(1, $0) }
        self.maxPerHost = maxPerHost.map { Swift.max(1, $0) }
    }

    /// A client whose calls run one after another, in the order they were made.
    public static func serialQueue() -> RequestControl { RequestControl(maxConcurrent: 1) }

    /// The ids of the calls running or waiting now.
    public var inFlight: [RequestID] {
        self.state.withLock { Array($0.admitted.keys) + $0.waiting.map(\.id) }
    }

    /// Cancels the call with `id`, running or waiting (nothing when there is none).
    public func cancel(_ id: RequestID) {
        let (task, waiter) = self.state.withLock { state -> (Task<ClientResponse, any Error>?, Waiter?) in
            if let index = state.waiting.firstIndex(where: { $0.id == id }) {
                return (nil, state.waiting.remove(at: index))
            }
            if let task = state.running[id] { return (task, nil) }
            if state.admitted[id] != nil {
                state.cancelledEarly.insert(id)
            } else {
                // Not arrived yet (the call is on its way): it is refused when it comes.
                state.cancelledBeforeArrival.append(id)
                if state.cancelledBeforeArrival.count > Self.rememberedCancellations { state.cancelledBeforeArrival.removeFirst() }
            }
            return (nil, nil)
        }
        task?.cancel()
        waiter?.continuation.resume(returning: .cancelled)
    }

    /// Cancels every call running or waiting.
    public func cancelAll() {
        let (tasks, waiters) = self.state.withLock { state -> ([Task<ClientResponse, any Error>], [Waiter]) in
            let waiters = state.waiting
            state.waiting.removeAll()
            state.cancelledEarly.formUnion(state.admitted.keys)
            return (Array(state.running.values), waiters)
        }
        for task in tasks { task.cancel() }
        for waiter in waiters { waiter.continuation.resume(returning: .cancelled) }
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let id = request.id
        let host = request.head.authority ?? ""
        switch await self.admit(id, host: host, priority: request.metadata[RequestPriority.self] ?? .normal,
                                refreshes: TokenAuthorization.refreshing, until: request.options.deadline) {
        case .admitted: break
        case .cancelled: throw ClientError(.cancelled, detail: "call \(id) cancelled before it ran")
        case .timedOut: throw ClientError.transport(TransportError(.totalTimeout, detail: "call \(id) waited for a place until its deadline"))
        case .duplicate: throw ClientError(.invalidRequest, detail: "the id \(id) is already used by a call in flight")
        }
        defer { self.leave(id, host: host) }
        let held = Self.placesHeld + [self]
        let task = Task { try await Self.$placesHeld.withValue(held) { try await next(request) } }
        let cancelledAlready = self.state.withLock { state in
            state.running[id] = task
            return state.cancelledEarly.remove(id) != nil
        }
        if cancelledAlready { task.cancel() }
        let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
        switch result {
        case .success(let response): return response
        case .failure(let error as ClientError): throw error
        case .failure(let error): throw ClientError.middleware(error, in: "request control")
        }
    }

    private enum Admission { case admitted, cancelled, duplicate, timedOut }

    /// Waits for a place, for a cancellation, or until `end`; refuses an id already in flight.
    /// A call of a token refresh also gets in on a place lent to that refresh.
    private func admit(_ id: RequestID, host: String, priority: RequestPriority, refreshes: Set<ObjectIdentifier>,
                       until end: ContinuousClock.Instant?) async -> Admission {
        enum Decision { case now, wait, never, duplicate }
        let cancelled = Mutex(false)
        let timer = Mutex<Task<Void, Never>?>(nil)
        defer { timer.withLock { $0?.cancel() } }
        let admitted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Admission, Never>) in
                let decision: Decision = self.state.withLock { state in
                    if state.admitted[id] != nil || state.waiting.contains(where: { $0.id == id }) { return .duplicate }
                    if let early = state.cancelledBeforeArrival.firstIndex(of: id) {
                        state.cancelledBeforeArrival.remove(at: early)
                        return .never
                    }
                    if cancelled.withLock({ $0 }) { return .never }
                    if self.hasRoom(state, host: host) || self.isLent(state, to: refreshes) {
                        self.take(&state, id: id, host: host)
                        return .now
                    }
                    state.arrivals += 1
                    state.waiting.append(Waiter(id: id, host: host, priority: priority, arrival: state.arrivals,
                                                refreshes: refreshes, continuation: continuation))
                    return .wait
                }
                switch decision {
                case .now: continuation.resume(returning: .admitted)
                case .never: continuation.resume(returning: .cancelled)
                case .duplicate: continuation.resume(returning: .duplicate)
                case .wait:
                    if let end {
                        timer.withLock {
                            $0 = Task { [self] in
                                do { try await Task.sleep(until: end, clock: .continuous) } catch { return }
                                self.stopWaiting(id, because: .timedOut)
                            }
                        }
                    }
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
            self.stopWaiting(id, because: .cancelled)
        }
        threadSanitizerSawResume()
        return admitted
    }

    /// A waiting call leaves the queue: its task was cancelled, or its deadline came.
    private func stopWaiting(_ id: RequestID, because reason: Admission) {
        let waiter = self.state.withLock { state -> Waiter? in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiting.remove(at: index)
        }
        waiter?.continuation.resume(returning: reason)
    }

    /// Whether a call waiting for one of `refreshes` holds a place here, lent to it.
    private func isLent(_ state: State, to refreshes: Set<ObjectIdentifier>) -> Bool {
        !state.lent.isEmpty && refreshes.contains { state.lent[$0] != nil }
    }

    /// A call holding a place here waits for the refresh `refresh`: that refresh's own calls
    /// get in, those waiting already included.
    func lend(to refresh: ObjectIdentifier) {
        let admitted: [Waiter] = self.state.withLock { state in
            state.lent[refresh, default: 0] += 1
            return self.admitWaiters(&state)
        }
        for waiter in admitted { waiter.continuation.resume(returning: .admitted) }
    }

    /// That call no longer waits for `refresh`.
    func endLoan(to refresh: ObjectIdentifier) {
        self.state.withLock { state in
            let left = (state.lent[refresh] ?? 1) - 1
            state.lent[refresh] = left > 0 ? left : nil
        }
    }

    private func hasRoom(_ state: State, host: String) -> Bool {
        (self.maxConcurrent.map { state.admitted.count < $0 } ?? true)
            && (self.maxPerHost.map { (state.perHost[host] ?? 0) < $0 } ?? true)
    }

    private func take(_ state: inout State, id: RequestID, host: String) {
        state.admitted[id] = host
        state.perHost[host, default: 0] += 1
    }

    /// The call is over: its place goes to the most urgent waiter that fits, earliest first.
    private func leave(_ id: RequestID, host: String) {
        let admitted: [Waiter] = self.state.withLock { state in
            state.running[id] = nil
            state.cancelledEarly.remove(id)
            if state.admitted.removeValue(forKey: id) != nil {
                state.perHost[host, default: 1] -= 1
                if state.perHost[host] == 0 { state.perHost[host] = nil }
            }
            return self.admitWaiters(&state)
        }
        for waiter in admitted { waiter.continuation.resume(returning: .admitted) }
    }

    /// Takes places for the waiters that fit now, most urgent first; the caller resumes them.
    private func admitWaiters(_ state: inout State) -> [Waiter] {
        var admitted: [Waiter] = []
        while let index = self.nextWaiter(state) {
            let waiter = state.waiting.remove(at: index)
            self.take(&state, id: waiter.id, host: waiter.host)
            admitted.append(waiter)
        }
        return admitted
    }

    private func nextWaiter(_ state: State) -> Int? {
        var best: Int?
        for (index, waiter) in state.waiting.enumerated()
        where self.hasRoom(state, host: waiter.host) || self.isLent(state, to: waiter.refreshes) {
            guard let current = best else { best = index; continue }
            let other = state.waiting[current]
            if waiter.priority > other.priority || (waiter.priority == other.priority && waiter.arrival < other.arrival) {
                best = index
            }
        }
        return best
    }
}
