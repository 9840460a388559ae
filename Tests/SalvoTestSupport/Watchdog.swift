import Synchronization

/// What ``withWatchdog(_:_:)`` throws when the work outlives its limit.
public struct WatchdogExpired: Error, CustomStringConvertible {
    public let limit: Duration
    public var description: String { "still running after \(self.limit): a hang" }
}

/// Runs `body` and returns its result, or throws ``WatchdogExpired`` once `limit` has passed,
/// whether or not `body` notices the cancellation it then gets. A hang detector: a
/// regression that hangs fails its test instead of stalling the whole run. The limit is far
/// above the time the work needs; it is not a speed check.
public func withWatchdog<T: Sendable>(
    _ limit: Duration = .seconds(20), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = FirstOutcome<T>()
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
        outcome.wait(continuation)
        let work = Task {
            do { outcome.finish(.success(try await body())) } catch { outcome.finish(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: limit)
            outcome.finish(.failure(WatchdogExpired(limit: limit)))
            work.cancel()
        }
    }
    return try result.get()
}

/// Resumes a continuation with the first of several outcomes.
private final class FirstOutcome<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<Result<T, any Error>, Never>?>(nil)

    public func wait(_ continuation: CheckedContinuation<Result<T, any Error>, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    public func finish(_ result: Result<T, any Error>) {
        self.continuation.withLock { $0.take() }?.resume(returning: result)
    }
}
