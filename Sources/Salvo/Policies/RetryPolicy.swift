import Synchronization

/// When and how often a failed request is sent again (see ``RetryMiddleware``).
///
/// By default: up to 3 attempts in all; idempotent methods only; statuses 408, 429, 500,
/// 502, 503 and 504, 403 only when it carries `Retry-After`, and transient transport
/// failures; exponential backoff from 100 ms with full jitter, at most 10 s between attempts;
/// `Retry-After` honoured up to 60 s (a server that asks for longer gets its answer returned
/// instead); blind retries limited by a per-client budget, while retries the server asked
/// for with `Retry-After` do not spend it.
///
/// ```swift
/// // GitHub: a 403 with Retry-After is a secondary rate limit, a plain 403 a permission
/// // error (returned at once, as the default `retryAfterStatuses` has it); a POST that was
/// // refused with 429 or 503 and Retry-After goes again.
/// let policy = RetryPolicy(maxAttempts: 4, retriesAnyMethodWhenAsked: true)
/// ```
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The backoff's first step; each retry may wait up to twice as long as the one before.
    public var baseDelay: Duration
    /// The longest wait between attempts the backoff chooses.
    public var maxDelay: Duration
    /// Methods that are retried. POST and PATCH are not idempotent: add them only for an API
    /// that makes them so, or turn on ``idempotencyKeys`` (or ``retriesAnyMethodWhenAsked``
    /// for the answers that say the request was not acted on).
    public var methods: Set<HTTPRequest.Method>
    /// Response statuses that are retried, with or without `Retry-After`.
    public var statuses: Set<Int>
    /// Response statuses that are retried only when the answer carries a valid `Retry-After`;
    /// without one the answer is returned at once. This rule wins over ``statuses`` for a
    /// status in both.
    ///
    /// By default `[403]`: some APIs (GitHub's secondary rate limit) refuse with a 403 and
    /// `Retry-After`, while a plain 403 is a permission error that no retry fixes.
    public var retryAfterStatuses: Set<Int>
    /// Whether transport failures (refused connections, resets, read timeouts) are retried.
    /// Only transient ones are (``ClientError/isTransient``): a redirect loop, a refused or
    /// endless redirect chain, a certificate that does not verify or a response that is not
    /// valid HTTP would fail every attempt alike, and is returned at once.
    /// A request whose method is not retried is still retried when the failure came before
    /// anything was sent (``ClientError/mayHaveBeenProcessed`` is false).
    public var retriesTransportFailures: Bool
    /// The longest `Retry-After` waited for; an answer asking for longer is returned at once.
    public var maxRetryAfter: Duration
    /// Sends POST and PATCH with an `Idempotency-Key` (one random value for all attempts of a
    /// call, unless the request has its own) and retries them like idempotent methods.
    public var idempotencyKeys: Bool
    /// Whether a request of any method — POST and PATCH too — is retried when the server
    /// said it did not act on it and asked to be called again: a 429 or 503, or a status of
    /// ``retryAfterStatuses``, carrying a valid `Retry-After` (RFC 6585 §4, RFC 9110 §15.6.4
    /// and §10.2.3). The status must be one this policy retries. Off by default: only
    /// ``methods`` are retried on answers.
    ///
    /// The request's body must be replayable: a one-shot stream is sent once and its answer
    /// returned. Without ``idempotencyKeys`` nothing guards against a server that asks for a
    /// retry after all: turn this on for APIs whose 429 and 503 mean "refused".
    public var retriesAnyMethodWhenAsked: Bool
    /// Limits blind retries — after a transport failure, or an answer without `Retry-After` —
    /// to a share of requests, so that an outage is not multiplied by the retries of every
    /// client (nil: no limit). Retries the server asked for with `Retry-After` do not spend
    /// it: ``maxAttempts``, ``maxRetryAfter`` and the call's deadline bound them.
    public var budget: RetryBudget?

    /// A policy; every setting has the default the type's summary lists.
    public init(maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(10),
                methods: Set<HTTPRequest.Method> = [.get, .head, .options, .put, .delete, .trace],
                statuses: Set<Int> = [408, 429, 500, 502, 503, 504], retryAfterStatuses: Set<Int> = [403],
                retriesTransportFailures: Bool = true, maxRetryAfter: Duration = .seconds(60),
                idempotencyKeys: Bool = false, retriesAnyMethodWhenAsked: Bool = false,
                budget: RetryBudget? = RetryBudget()) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.methods = methods
        self.statuses = statuses
        self.retryAfterStatuses = retryAfterStatuses
        self.retriesTransportFailures = retriesTransportFailures
        self.maxRetryAfter = maxRetryAfter
        self.idempotencyKeys = idempotencyKeys
        self.retriesAnyMethodWhenAsked = retriesAnyMethodWhenAsked
        self.budget = budget
    }

    /// A wait before the next attempt: the server's own `Retry-After`, or the policy's backoff.
    struct Wait: Equatable {
        var duration: Duration
        /// The server asked for it with `Retry-After`: the budget is not spent on it.
        var asked: Bool
    }

    /// Whether requests of `method` are retried on a retryable answer, whatever it says.
    func retries(_ method: HTTPRequest.Method) -> Bool {
        self.methods.contains(method) || (self.idempotencyKeys && (method == .post || method == .patch))
    }

    /// What to do with an answer of `status` to a request of `method` (whose body can be sent
    /// again), on attempt number `attempt`: wait and send again, or return it (nil).
    /// The attempt count, the deadline and the budget are the middleware's to check.
    func wait(afterStatus status: Int, retryAfter: String?, method: HTTPRequest.Method, attempt: Int) -> Wait? {
        let asked = RetryAfter.delay(retryAfter)
        // A status of `retryAfterStatuses` means "come back later" only with the field.
        let retryable = self.retryAfterStatuses.contains(status) ? asked != nil : self.statuses.contains(status)
        guard retryable else { return nil }
        // 429 and 503 say the request was refused, not acted on (RFC 6585 §4, RFC 9110
        // §15.6.4), as does a rate limit in `retryAfterStatuses`: with Retry-After the
        // server asks for this very request again, whatever its method.
        let refused = status == 429 || status == 503 || self.retryAfterStatuses.contains(status)
        let askedAgain = self.retriesAnyMethodWhenAsked && refused && asked != nil
        guard self.retries(method) || askedAgain else { return nil }
        guard let asked else { return Wait(duration: self.backoff(before: attempt), asked: false) }
        // Hours of waiting would hold the caller hostage: the answer is more use.
        guard asked <= self.maxRetryAfter else { return nil }
        return Wait(duration: asked, asked: true)
    }

    /// The backoff before retry number `retry` (1 for the first): full jitter, a random wait
    /// between zero and `min(maxDelay, baseDelay × 2^(retry-1))`.
    func backoff(before retry: Int) -> Duration {
        // In seconds as a Double, capped at a day: no setting, however absurd, overflows.
        func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        let doubled = seconds(self.baseDelay) * Double(1 << Swift.min(Swift.max(retry - 1, 0), 30))
        let ceiling = Swift.min(seconds(self.maxDelay), doubled, 86_400)
        guard ceiling > 0 else { return .zero }
        return .seconds(Double.random(in: 0...ceiling))
    }
}

/// A share of requests that may be retried blindly — by default 10% of them, and at least a
/// few retries a second whatever the traffic — shared by every client the policy is installed
/// in. When it is spent, failures are returned at once instead of retried. A retry the server
/// asked for with `Retry-After` does not spend it.
///
/// A token bucket: each first attempt adds `ratio` of a token (up to `ratio × 100` stored);
/// each blind retry takes one, or one of `minimumPerSecond` retries allowed each second.
public final class RetryBudget: Sendable {
    /// The share of first attempts that may be retried (0.1: one retry for ten calls).
    public let ratio: Double
    /// Retries allowed each second even when the share is spent.
    public let minimumPerSecond: Int

    private struct State {
        var tokens: Double
        var second: ContinuousClock.Instant
        var usedThisSecond = 0
    }

    private let state: Mutex<State>

    /// A budget of `ratio` retries per first attempt, and at least `minimumPerSecond` a second.
    public init(ratio: Double = 0.1, minimumPerSecond: Int = 3) {
        self.ratio = Swift.max(0, ratio)
        self.minimumPerSecond = Swift.max(0, minimumPerSecond)
        self.state = Mutex(State(tokens: 0, second: .now))
    }

    /// A first attempt went out.
    func deposit() {
        self.state.withLock { state in
            state.tokens = Swift.min(state.tokens + self.ratio, Swift.max(self.ratio * 100, 1))
        }
    }

    /// Whether a retry may go now (and it is counted).
    func withdraw() -> Bool {
        self.state.withLock { state in
            if state.tokens >= 1 {
                state.tokens -= 1
                return true
            }
            let now = ContinuousClock.now
            if now - state.second >= .seconds(1) {
                state.second = now
                state.usedThisSecond = 0
            }
            guard state.usedThisSecond < self.minimumPerSecond else { return false }
            state.usedThisSecond += 1
            return true
        }
    }
}
