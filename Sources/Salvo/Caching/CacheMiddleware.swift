/// An ``HTTPCache`` as a middleware, for a chain where you place it yourself. Place it
/// after the middleware that change requests (authorization, default fields), so that
/// what it stores and looks up is the request as it goes out:
///
/// ```swift
/// let caching = CacheMiddleware(cache: HTTPCache(store: MemoryCacheStore(capacity: 20 << 20)))
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [
///     TokenAuthorization(store: tokens, refresh: refresh),
///     caching,
/// ]))
/// await caching.store(Array(#"{"id":7}"#.utf8), headerFields: [.contentType: "application/json"],
///                     for: "https://api.example.com/users/7")
/// ```
///
/// (``Client/Configuration/cache`` does the same, as the last middleware.) The call's
/// ``Client/CallOptions/cachePolicy`` applies; without one, the protocol's rules.
public struct CacheMiddleware: Middleware {
    public let cache: HTTPCache

    public init(cache: HTTPCache = HTTPCache()) {
        self.cache = cache
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        try await self.cache.respond(to: request, next: next)
    }

    /// Stores `body` as the `200` response for `GET url` (see ``HTTPCache/store(_:status:headerFields:for:)``).
    @discardableResult
    public func store(_ body: [UInt8], status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:], for url: String) async -> Bool {
        await self.cache.store(body, status: status, headerFields: headerFields, for: url)
    }

    /// The response stored for `GET url`, whatever its age.
    public func cachedResponse(for url: String) async -> CachedResponse? {
        await self.cache.cachedResponse(for: url)
    }

    /// Removes what is stored for `GET url`.
    public func removeCachedResponse(for url: String) async {
        await self.cache.removeCachedResponse(for: url)
    }

    /// Removes everything stored.
    public func removeAll() async {
        await self.cache.removeAll()
    }
}
