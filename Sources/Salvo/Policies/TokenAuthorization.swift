import Foundation

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
///   are; with `scope: .optIn`, so do all but those tagged ``authorize``
///   (`endpoint.authorized()`). A request that goes as it is never triggers a refresh.
/// - A response to a request tagged ``login`` is offered to `capture` (a ``TokenCapture``),
///   which may take a token from it (004's "after authorization"), whatever the scope.
/// - With no token yet, a request goes without one by default, and its 401, if any, is
///   answered by a refresh and one more try; `whenNoToken: .refreshFirst` asks `refresh` for
///   a token before the first request instead.
/// - A store that cannot be read counts as empty (as if no token were stored); a token that
///   cannot be saved is still used for this process.
public struct TokenAuthorization: Middleware {
    /// The tag of requests that go without the token.
    public static let noAuthorization = StaticAuthorization.noAuthorization
    /// The tag of requests that ask for the token: with `scope: .optIn`, only they get it.
    public static let authorize = StaticAuthorization.authorize
    /// The tag of a login request, whose response `capture` may take a token from.
    public static let login = "login"

    /// What happens to a request when there is no token yet (none stored, none set, none
    /// captured).
    public enum MissingTokenPolicy: Sendable, Hashable {
        /// Send it without an `Authorization` header. An answer of 401 leads to the usual
        /// refresh — `refresh` is called with nil — and the request is sent again once, with
        /// the new token. Endpoints that need no token work before any login, and `refresh` is
        /// called only when the server asks for a token. The default.
        case sendWithout
        /// Ask `refresh` for a token first (with nil), and send the request with it: nothing
        /// goes out unauthenticated. A `refresh` that fails fails the request, with
        /// `.authorizationFailed`, before anything is sent.
        case refreshFirst
    }

    let coordinator: TokenCoordinator
    let capture: TokenCapture?
    /// What happens to a request when there is no token yet.
    public let whenNoToken: MissingTokenPolicy
    /// Which requests get the token.
    public let scope: AuthorizationScope

    /// - Parameters:
    ///   - store: where the token is kept between calls and runs.
    ///   - whenNoToken: with no token yet, send requests without one (the default) or
    ///     refresh first.
    ///   - scope: every request but those that opt out (the default), or only those that
    ///     opt in.
    ///   - capture: takes a token from the response to a request tagged ``login``:
    ///     `.decoding(Reply.self) { reply in … }`, `.oauth2` or `.bytes { head, body in … }`.
    ///   - refresh: a new token, given the one it replaces (nil when there is none).
    public init(store: any TokenStore = InMemoryTokenStore(),
                whenNoToken: MissingTokenPolicy = .sendWithout,
                scope: AuthorizationScope = .optOut,
                capture: TokenCapture? = nil,
                refresh: @escaping @Sendable (AuthToken?) async throws -> AuthToken) {
        self.coordinator = TokenCoordinator(store: store, refresh: refresh)
        self.capture = capture
        self.whenNoToken = whenNoToken
        self.scope = scope
    }

    /// The same, `capture` given as a closure over the raw response — as
    /// `capture: .bytes { head, body in … }`.
    public init(store: any TokenStore = InMemoryTokenStore(),
                whenNoToken: MissingTokenPolicy = .sendWithout,
                scope: AuthorizationScope = .optOut,
                capture: @escaping @Sendable (HTTPResponse, [UInt8]) -> AuthToken?,
                refresh: @escaping @Sendable (AuthToken?) async throws -> AuthToken) {
        self.init(store: store, whenNoToken: whenNoToken, scope: scope, capture: .bytes(capture), refresh: refresh)
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
                if let token = try capture.take(response.head, bytes, request.coders) { self.coordinator.set(token) }
            }
            return response
        }
        if self.isRefreshing || !self.scope.covers(tags) || request.head.headerFields[.authorization] != nil {
            return try await next(request)
        }
        // Waiting for a refresh is bounded by the call's deadline like the rest of it.
        let end = request.options.deadline
        let (token, generation) = try await self.coordinator.usable(whenMissing: self.whenNoToken, until: end)
        var authorized = request
        if let token { authorized.head.headerFields[.authorization] = HTTPCredentials.bearer(token.accessToken).headerValue }
        let response = try await next(authorized)
        guard response.status == .unauthorized, request.body?.isReplayable ?? true else { return response }
        await response.discardBody(streaming: request.isStreaming)
        let (fresh, _) = try await self.coordinator.refreshed(after: generation, until: end)
        authorized.head.headerFields[.authorization] = HTTPCredentials.bearer(fresh.accessToken).headerValue
        return try await next(authorized)
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
