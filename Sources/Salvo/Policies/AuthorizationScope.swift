/// Which requests an authorization middleware (``StaticAuthorization``, ``TokenAuthorization``)
/// gives credentials to: all but those that opt out, or only those that opt in.
///
/// ```swift
/// // Opt out, the default: every request but those tagged `no-auth`.
/// let everywhere = StaticAuthorization(.bearer(apiToken))
/// let health = Endpoint<String>.get("/health").tagged(StaticAuthorization.noAuthorization)
///
/// // Opt in: only the requests that ask for it.
/// let auth = TokenAuthorization(scope: .optIn) { old in try await renew(old) }
/// let me = Endpoint<User>.get("/me").authorized()
/// ```
///
/// Either way, a request tagged ``StaticAuthorization/noAuthorization`` or with an
/// `Authorization` header of its own goes as it is — opting out wins over opting in.
public enum AuthorizationScope: Sendable, Hashable {
    /// Every request, except those tagged ``StaticAuthorization/noAuthorization``. The default.
    case optOut
    /// Only requests tagged ``StaticAuthorization/authorize`` — `endpoint.authorized()`, or a
    /// ``Request`` type whose `metadata` has the tag.
    case optIn

    /// Whether this scope gives credentials to a request with these tags (its own
    /// `Authorization` header is checked by the middleware).
    public func covers(_ tags: Set<String>) -> Bool {
        if tags.contains(StaticAuthorization.noAuthorization) { return false }
        switch self {
        case .optOut: return true
        case .optIn: return tags.contains(StaticAuthorization.authorize)
        }
    }
}

extension TypedEndpoint {
    /// The same request, asking for credentials: tagged ``StaticAuthorization/authorize``, which
    /// an authorization middleware with `scope: .optIn` looks for. (With the default scope,
    /// every request gets them anyway.)
    public func authorized() -> Self {
        self.tagged(StaticAuthorization.authorize)
    }
}
