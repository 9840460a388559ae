import Foundation

/// Sends a request again when it failed in a way that a second try may fix, as its
/// ``RetryPolicy`` says: a status such as 503, or a transport failure that might not happen
/// again (``ClientError/isTransient``).
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [
///     RetryMiddleware(RetryPolicy(maxAttempts: 4, idempotencyKeys: true)),
/// ]))
/// ```
///
/// - The call's deadline (its `timeout` or `deadline`, or the client's timeout) spans every
///   attempt and wait: a retry never outlives it.
/// - A body that cannot be replayed (a one-shot stream) is never sent twice.
/// - A retry the server asked for with `Retry-After` waits what it asked (up to
///   ``RetryPolicy/maxRetryAfter``) and does not spend the ``RetryPolicy/budget``.
/// - A refused response's body is drained before the next attempt, so that its connection
///   can carry it; the last response (or error) is what the caller gets.
/// - Cancelling the call ends the waits too.
/// Put it first in the list to retry around the other middleware, last to retry only the
/// transport.
public struct RetryMiddleware: Middleware {
    public var policy: RetryPolicy

    public init(_ policy: RetryPolicy = RetryPolicy()) {
        self.policy = policy
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        var request = request
        let method = request.head.method
        if self.policy.idempotencyKeys, method == .post || method == .patch,
           request.head.headerFields[.idempotencyKey] == nil {
            request.head.headerFields[.idempotencyKey] = UUID().uuidString
        }
        let retriesMethod = self.policy.retries(method)
        let replayable = request.body?.isReplayable ?? true
        // One end for all the attempts.
        request.options.transport = request.options.transport.anchored(at: .now)
        let end = request.options.deadline
        self.policy.budget?.deposit()

        var attempt = 1
        while true {
            let outcome: Result<ClientResponse, ClientError>
            do {
                outcome = .success(try await next(request))
            } catch {
                outcome = .failure(error)
            }
            guard attempt < self.policy.maxAttempts, replayable else { return try outcome.get() }
            let wait: Duration
            switch outcome {
            case .success(let response):
                guard let retry = self.policy.wait(afterStatus: response.status.code, retryAfter: response.headerFields[.retryAfter],
                                                   method: method, attempt: attempt) else { return response }
                // A retry the server asked for later is not blind: the budget, which keeps
                // blind retries from multiplying an outage, must not starve it. One "asked"
                // for at once (`Retry-After: 0`, a date gone by) spends it like any other.
                let askedLater = retry.asked && retry.duration > .zero
                guard self.fits(retry.duration, before: end), askedLater || self.policy.budget?.withdraw() ?? true else { return response }
                wait = retry.duration
                await response.discardBody(streaming: request.isStreaming)
            case .failure(let error):
                // A redirect loop or a certificate that does not verify fails every attempt
                // alike: only a failure that might not happen again is worth another.
                guard self.policy.retriesTransportFailures, error.code == .transportFailed, error.isTransient,
                      retriesMethod || !error.mayHaveBeenProcessed else { throw error }
                wait = self.policy.backoff(before: attempt)
                guard self.fits(wait, before: end), self.policy.budget?.withdraw() ?? true else { throw error }
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                throw ClientError(.cancelled, detail: "cancelled while waiting to retry")
            }
            attempt += 1
        }
    }

    /// Whether waiting `wait` still leaves time before `end` for another attempt.
    private func fits(_ wait: Duration, before end: ContinuousClock.Instant?) -> Bool {
        guard let end else { return true }
        return ContinuousClock.now + wait < end
    }
}

extension HTTPField.Name {
    /// `Idempotency-Key` (an IETF draft that payment and other APIs follow).
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}
