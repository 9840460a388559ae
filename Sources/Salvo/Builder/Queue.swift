/// Requests sent one after another, each once the one before has ended: a login, then what
/// needs its token; a create, then a read of what it made.
///
/// ```swift
/// let steps = Queue {
///     Post("login", from: Backend()).body { Key("user", value: name) }
///     Get("profile", from: Backend()).responseBody(Profile.self)
///     if refresh { Get("feed", from: Backend()) }
/// }
/// for outcome in await client.outcomes(of: steps) {
///     print(outcome.operationName, outcome.error?.description ?? "ok")
/// }
/// let profile = await client.outcomes(of: steps).last?.value(as: Profile.self)
/// ```
public struct Queue: Sendable {
    /// The requests, in the order they are sent.
    public let requests: [any Request]

    public init(@QueueBuilder _ requests: () -> [any Request]) {
        self.requests = requests()
    }
}

/// Collects the requests of a ``Queue``: any `Request`, with `if`, `if … else` and `for`.
@resultBuilder
public enum QueueBuilder {
    public static func buildExpression(_ request: some Request) -> [any Request] { [request] }
    public static func buildBlock(_ parts: [any Request]...) -> [any Request] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [any Request]?) -> [any Request] { part ?? [] }
    public static func buildEither(first part: [any Request]) -> [any Request] { part }
    public static func buildEither(second part: [any Request]) -> [any Request] { part }
    public static func buildArray(_ parts: [[any Request]]) -> [any Request] { parts.flatMap { $0 } }
}

/// How one request of a ``Queue`` ended: its decoded success body, or its error.
public struct QueuedOutcome: Sendable {
    /// The request's operation name (`GET /profile` for a built request).
    public let operationName: String
    /// The decoded success body; nil when the request failed.
    public let value: (any Sendable)?
    /// Why the request failed, if it did.
    public let error: ClientError?

    /// The success body as `type`, when it is one.
    public func value<T>(as type: T.Type) -> T? { self.value as? T }
}

extension Client {
    /// Sends the queue's requests in order, each once the one before has ended, and returns how
    /// each ended. With `stopAtFailure` the first failure ends the queue: the requests after it
    /// are not sent and have no outcome. Cancelling the task cancels the request in flight and
    /// stops the queue.
    public func outcomes(of queue: Queue, stopAtFailure: Bool = false, options: CallOptions = CallOptions()) async -> [QueuedOutcome] {
        var outcomes: [QueuedOutcome] = []
        outcomes.reserveCapacity(queue.requests.count)
        for request in queue.requests {
            let outcome = await self.queuedOutcome(request, options: options)
            outcomes.append(outcome)
            if outcome.error != nil, stopAtFailure || Task.isCancelled { break }
        }
        return outcomes
    }

    private func queuedOutcome<R: Request>(_ request: R, options: CallOptions) async -> QueuedOutcome {
        let (value, error) = await self.outcome(request, options: options)
        return QueuedOutcome(operationName: request.operationName, value: value, error: error)
    }
}
