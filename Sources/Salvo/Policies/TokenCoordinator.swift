import Foundation
import Synchronization

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

    /// A token to send now: the current one, or a refreshed one when it has expired. With
    /// no token at all, a refreshed one for `.refreshFirst`, and none for `.sendWithout` (the
    /// request goes bare; its 401, if any, leads to ``refreshed(after:until:)``). The
    /// generation is the one the request goes with, token or not.
    func usable(whenMissing missing: TokenAuthorization.MissingTokenPolicy = .refreshFirst,
                until end: ContinuousClock.Instant? = nil) async throws(ClientError) -> (AuthToken?, Int) {
        let (token, generation) = self.loaded()
        guard let token else {
            if missing == .sendWithout { return (nil, generation) }
            let (fresh, current) = try await self.refreshed(after: generation, until: end)
            return (fresh, current)
        }
        if (token.expiresAt ?? .distantFuture) > Date() { return (token, generation) }
        let (fresh, current) = try await self.refreshed(after: generation, until: end)
        return (fresh, current)
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
            let fresh = try await TokenAuthorization.$refreshing.withValue(marked) { try await refresh(old) }
            outcome = .success(fresh.renewing(old))
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
