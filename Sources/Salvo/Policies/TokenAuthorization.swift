import Foundation
import Synchronization

/// Bearer tokens from a ``TokenStore``, renewed by your `refresh` when the server answers
/// 401 (or the token has expired), and the request sent again with the new one.
///
/// ```swift
/// let auth = TokenAuthorization(store: FileTokenStore(path: "/var/lib/app/token.json")) { old in
///     // Runs alone: 100 requests that meet a 401 together cause one refresh.
///     try await authClient.value(Endpoint<AuthToken>.post("/oauth/refresh", body: ["refresh_token": old?.refreshToken ?? ""]))
/// }
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [auth]))
/// ```
///
/// - **Single flight**: concurrent requests that meet a 401 share one refresh and are all
///   sent again with its token; a request that went out with a token older than the current
///   one is sent again with the current one, without another refresh.
/// - A refresh that fails fails every request waiting for it, with `.authorizationFailed`
///   and the refresh's error in ``ClientError/underlyingError``.
/// - The requests `refresh` makes go as they are through this middleware (even through a
///   client with it): without its token, never triggering its refresh. Another
///   `TokenAuthorization` — another client's, that `refresh` calls — authorizes them as usual.
/// - A request is sent again at most once, and only with a body that can be replayed.
/// - Requests tagged ``noAuthorization`` or with an `Authorization` of their own go as they
///   are; a response to a request tagged ``login`` is offered to `capture`, which may take
///   a token from it (004's "after authorization").
/// - A store that cannot be read counts as empty (a refresh follows); a token that cannot be
///   saved is still used for this process.
public struct TokenAuthorization: Middleware {
    public static let noAuthorization = StaticAuthorization.noAuthorization
    /// The tag of a login request, whose response `capture` may take a token from.
    public static let login = "login"

    let coordinator: TokenCoordinator
    let capture: (@Sendable (HTTPResponse, [UInt8]) -> AuthToken?)?

    public init(store: any TokenStore = InMemoryTokenStore(),
                capture: (@Sendable (HTTPResponse, [UInt8]) -> AuthToken?)? = nil,
                refresh: @escaping @Sendable (AuthToken?) async throws -> AuthToken) {
        self.coordinator = TokenCoordinator(store: store, refresh: refresh)
        self.capture = capture
    }

    /// The token in use now (loaded from the store if need be), nil when there is none yet.
    public func currentToken() -> AuthToken? {
        self.coordinator.loaded().token
    }

    /// Sets the token (after a login of your own), and stores it.
    public func setToken(_ token: AuthToken?) {
        self.coordinator.set(token)
    }

    /// The token coordinators whose refresh the current task is part of. A set of identities
    /// rather than one flag: a refresh that calls through another client must meet that
    /// client's own authorization, which a flag shared by every instance would switch off.
    @TaskLocal static var refreshing: Set<ObjectIdentifier> = []

    /// Whether the current task is this instance's own refresh (or runs inside it).
    var isRefreshing: Bool { Self.refreshing.contains(ObjectIdentifier(self.coordinator)) }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let tags = request.metadata.tags
        if tags.contains(Self.login), !self.isRefreshing {
            // Checked first: a login often carries credentials of its own (Basic, for a
            // token endpoint), and its answer is still the token to capture.
            var response = try await next(request)
            if let capture = self.capture, !request.isStreaming {
                let bytes = try await response.collectedBytes(limit: request.options.maxBodySize)
                if let token = capture(response.head, bytes) { self.coordinator.set(token) }
            }
            return response
        }
        if self.isRefreshing || tags.contains(Self.noAuthorization) || request.head.headerFields[.authorization] != nil {
            return try await next(request)
        }
        // Waiting for a refresh is bounded by the call's deadline like the rest of it.
        let end = request.options.deadline
        let (token, generation) = try await self.coordinator.usable(until: end)
        var authorized = request
        authorized.head.headerFields[.authorization] = HTTPCredentials.bearer(token.accessToken).headerValue
        let response = try await next(authorized)
        guard response.status == .unauthorized, request.body?.isReplayable ?? true else { return response }
        await response.discardBody(streaming: request.isStreaming)
        let (fresh, _) = try await self.coordinator.refreshed(after: generation, until: end)
        authorized.head.headerFields[.authorization] = HTTPCredentials.bearer(fresh.accessToken).headerValue
        return try await next(authorized)
    }
}

/// The token of one ``TokenAuthorization``, and its one refresh at a time.
final class TokenCoordinator: Sendable {
    private struct State {
        var token: AuthToken?
        var loaded = false
        /// Bumped by each new token: a request knows which token it went with.
        var generation = 0
        var refreshing: SharedWork<(AuthToken, Int)>?
    }

    private let state = Mutex(State())
    private let store: any TokenStore
    private let refresh: @Sendable (AuthToken?) async throws -> AuthToken

    init(store: any TokenStore, refresh: @escaping @Sendable (AuthToken?) async throws -> AuthToken) {
        self.store = store
        self.refresh = refresh
    }

    /// The token and its generation, loaded from the store the first time.
    func loaded() -> (token: AuthToken?, generation: Int) {
        if let known = self.state.withLock({ $0.loaded ? ($0.token, $0.generation) : nil }) { return known }
        let stored = try? self.store.load()   // unreadable: as if empty (documented)
        return self.state.withLock { state in
            if !state.loaded {
                state.loaded = true
                state.token = stored
            }
            return (state.token, state.generation)
        }
    }

    /// A token to send now: the current one, or a refreshed one when there is none or it
    /// has expired.
    func usable(until end: ContinuousClock.Instant? = nil) async throws(ClientError) -> (AuthToken, Int) {
        let (token, generation) = self.loaded()
        if let token, (token.expiresAt ?? .distantFuture) > Date() { return (token, generation) }
        return try await self.refreshed(after: generation, until: end)
    }

    /// A token newer than `generation`: the one another refresh already brought, or the
    /// result of the refresh under way, or of a new one. A caller whose task is cancelled
    /// stops waiting at once; the refresh goes on for the others (and for the store).
    func refreshed(after generation: Int, until end: ContinuousClock.Instant? = nil) async throws(ClientError) -> (AuthToken, Int) {
        enum Step { case done(AuthToken, Int), wait(SharedWork<(AuthToken, Int)>, start: AuthToken??) }
        let step: Step = self.state.withLock { state in
            if state.generation > generation, let token = state.token { return .done(token, state.generation) }
            if let refreshing = state.refreshing { return .wait(refreshing, start: nil) }
            let refreshing = SharedWork<(AuthToken, Int)>(cancellation: ClientError(.cancelled, detail: "cancelled while waiting for a token refresh"),
                                                          stopsWhenAbandoned: false)
            state.refreshing = refreshing
            return .wait(refreshing, start: .some(state.token))
        }
        switch step {
        case .done(let token, let current):
            return (token, current)
        case .wait(let refreshing, let start):
            // While this call waits, the places it holds in request controls are lent to the
            // refresh: a refresh sent through such a control must not queue behind the very
            // calls that wait for it.
            let holder = ObjectIdentifier(self)
            let controls = RequestControl.placesHeld
            for control in controls { control.lend(to: holder) }
            defer { for control in controls { control.endLoan(to: holder) } }
            if case .some(let old) = start {
                refreshing.start { [self] in await self.runRefresh(from: old, as: refreshing) }
            }
            return try await refreshing.wait(until: end, timeout: ClientError.transport(
                TransportError(.totalTimeout, detail: "waiting for a token refresh"))).get()
        }
    }

    /// The refresh itself, its requests marked as this coordinator's so that they never
    /// refresh through it; its token applied and stored before the waiters hear of it.
    private func runRefresh(from old: AuthToken?, as refreshing: SharedWork<(AuthToken, Int)>) async -> Result<(AuthToken, Int), ClientError> {
        let refresh = self.refresh
        let outcome: Result<AuthToken, any Error>
        do {
            let marked = TokenAuthorization.refreshing.union([ObjectIdentifier(self)])
            outcome = .success(try await TokenAuthorization.$refreshing.withValue(marked) { try await refresh(old) })
        } catch {
            outcome = .failure(error)
        }
        let applied: (AuthToken, Int)? = self.state.withLock { state in
            if state.refreshing === refreshing { state.refreshing = nil }
            guard case .success(let token) = outcome else { return nil }
            state.token = token
            state.loaded = true
            state.generation += 1
            return (token, state.generation)
        }
        switch outcome {
        case .success(let token):
            let current = applied?.1 ?? 0
            self.persist(token, generation: current)
            return .success((token, current))
        case .failure(let error):
            if let error = error as? ClientError, error.code == .authorizationFailed { return .failure(error) }
            var failure = ClientError(.authorizationFailed, detail: "the token refresh failed: \(error)")
            failure.underlyingError = error
            return .failure(failure)
        }
    }

    func set(_ token: AuthToken?) {
        let generation = self.state.withLock { state in
            state.token = token
            state.loaded = true
            state.generation += 1
            return state.generation
        }
        self.persist(token, generation: generation)
    }

    /// The newest generation written to the store: an older token never replaces a newer one.
    private let persisted = Mutex(-1)

    /// Saves `token` unless a newer one is stored already. A store that fails: the token
    /// still serves this process (documented on ``TokenAuthorization``).
    private func persist(_ token: AuthToken?, generation: Int) {
        self.persisted.withLock { newest in
            guard generation > newest else { return }
            newest = generation
            try? self.store.save(token)
        }
    }
}

extension ClientResponse {
    /// The whole body of a collected response, the same bytes handed on to the caller.
    mutating func collectedBytes(limit: Int?) async throws(ClientError) -> [UInt8] {
        if let collected = self.collectedBody { return collected }
        let bytes: [UInt8]
        do {
            bytes = try await self.body.collect(upTo: limit ?? Int.max)
        } catch {
            throw ClientError.transport(error)
        }
        self.setCollectedBody(bytes)
        return bytes
    }
}
