import Synchronization

/// The client's calls that carry an id (``Client/CallOptions/id``), so that they can be
/// cancelled from anywhere by ``Client/cancel(_:)`` and ``Client/cancelAll()``.
///
/// A call with an id runs in a task of its own (another thread can cancel a task it holds,
/// not one it does not), which costs a task per call: calls without an id skip all of this and
/// are cancelled with their caller's task.
final class CallRegistry: Sendable {
    private struct State {
        var running: [RequestID: any Cancellable] = [:]
        /// Ids cancelled before their call arrived (the most recent ones, bounded): the call
        /// is refused when it comes.
        var cancelledBeforeArrival: [RequestID] = []
        /// Ids whose call is over (the most recent ones, bounded): a late cancel of one is
        /// not kept for a later call that reuses the id.
        var finished: [RequestID] = []
    }

    /// The id of the call the current task runs for, inside ``run(_:_:)``: a call made inside
    /// it with the same id (a download's stream) is the same call, not registered again.
    @TaskLocal static var current: RequestID?

    /// How many cancellations of calls not yet arrived are remembered.
    static let rememberedCancellations = 1024

    private let state = Mutex(State())

    /// Runs `call` as the call `id`, cancellable by id; straight away without an id.
    func run<T: Sendable>(_ id: RequestID?, _ call: @escaping @Sendable () async throws(ClientError) -> T) async throws(ClientError) -> T {
        guard let id, id != Self.current else { return try await call() }
        // Decided and started under the lock: a cancel comes before the call (refused) or
        // finds its task.
        let arrival: Arrival<T> = self.state.withLock { state in
            if state.running[id] != nil { return .duplicate }
            if let early = state.cancelledBeforeArrival.firstIndex(of: id) {
                state.cancelledBeforeArrival.remove(at: early)
                return .cancelled
            }
            if let done = state.finished.firstIndex(of: id) { state.finished.remove(at: done) }
            let task = Task<T, any Error> { try await Self.$current.withValue(id) { try await call() } }
            state.running[id] = task
            return .run(task)
        }
        let task: Task<T, any Error>
        switch arrival {
        case .run(let running): task = running
        case .cancelled: throw ClientError(.cancelled, detail: "call \(id) was cancelled before it was made")
        case .duplicate: throw ClientError(.invalidRequest, detail: "the id \(id) is already used by a call in flight")
        }
        defer {
            self.state.withLock { state in
                state.running[id] = nil
                state.finished.append(id)
                if state.finished.count > Self.rememberedCancellations { state.finished.removeFirst() }
            }
        }
        let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
        switch result {
        case .success(let value): return value
        case .failure(let error as ClientError): throw error
        case .failure(let error): throw ClientError(error)
        }
    }

    /// Cancels the call `id` if it runs; remembers the id if no such call has come yet.
    func cancel(_ id: RequestID) {
        let task = self.state.withLock { state -> (any Cancellable)? in
            if let task = state.running[id] { return task }
            if state.finished.contains(id) { return nil }
            state.cancelledBeforeArrival.append(id)
            if state.cancelledBeforeArrival.count > Self.rememberedCancellations { state.cancelledBeforeArrival.removeFirst() }
            return nil
        }
        task?.cancel()
    }

    /// Cancels every call with an id running now.
    func cancelAll() {
        let tasks = self.state.withLock { Array($0.running.values) }
        for task in tasks { task.cancel() }
    }

    /// The ids of the calls running now.
    var inFlight: [RequestID] { self.state.withLock { Array($0.running.keys) } }
}

private enum Arrival<T: Sendable> {
    case run(Task<T, any Error>)
    case cancelled
    case duplicate
}

/// A running call's task, seen only as something to cancel.
private protocol Cancellable: Sendable {
    func cancel()
}

extension Task: Cancellable {}
