/// Managing a client's cache by hand, by request: the spellings Simplicity users know.
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(cache: HTTPCache()))
/// try await client.setCachedResponse(subscriptions, for: GetSubscriptions())
/// let cached = try await client.cachedResponse(for: GetSubscriptions())   // Subscriptions?
/// try await client.removeCachedResponse(for: GetSubscriptions())
/// await client.clearNetworkCache()
/// ```
///
/// Entries are keyed by the request's URL as the client builds it (base URL, path, query
/// items, the client's query items). Without a ``Client/Configuration/cache`` the setter
/// throws `.invalidRequest` and the rest find nothing.
extension Client {
    /// Stores `value`, encoded as JSON with the client's coders, as the `200` response to
    /// `request`. With `maxAge` it is fresh for that long (the protocol's rules answer from
    /// it); without, only ``CachePolicy/returnCacheDataElseLoad`` and
    /// ``CachePolicy/returnCacheDataDontLoad`` calls (and ``cachedResponse(for:)``) use it.
    public func setCachedResponse<R: Request>(_ value: R.SuccessResponseBody, for request: R,
                                              maxAge: Duration? = nil) async throws(ClientError) where R.SuccessResponseBody: Encodable {
        guard let cache = self.configuration.cache else {
            throw ClientError(.invalidRequest, detail: "the client has no cache (Configuration.cache)")
        }
        let (head, _) = try self.prepare(request)
        let body = try self.configuration.coders.encodeJSON(value)
        var fields: HTTPFields = [.contentType: "application/json"]
        if let maxAge { fields[.cacheControl] = "max-age=\(maxAge.components.seconds)" }
        guard await cache.store(body, headerFields: fields, for: Self.cacheURL(head)) else {
            throw ClientError(.bodyTooLarge, detail: "the cache's store does not take \(body.count) bytes")
        }
    }

    /// The success body stored for `request`, decoded, whatever its age; nil when none is.
    public func cachedResponse<R: Request>(for request: R) async throws(ClientError) -> R.SuccessResponseBody? {
        guard let cache = self.configuration.cache else { return nil }
        let (head, _) = try self.prepare(request)
        guard let stored = await cache.cachedResponse(for: Self.cacheURL(head)) else { return nil }
        return try request.decodeSuccessBody(from: stored.body, coders: self.configuration.coders)
    }

    /// Removes what is stored for `request`.
    public func removeCachedResponse<R: Request>(for request: R) async throws(ClientError) {
        guard let cache = self.configuration.cache else { return }
        let (head, _) = try self.prepare(request)
        await cache.removeCachedResponse(for: Self.cacheURL(head))
    }

    /// Removes everything the client's cache stores.
    public func clearNetworkCache() async {
        await self.configuration.cache?.removeAll()
    }

    static func cacheURL(_ head: HTTPRequest) -> String {
        "\(head.scheme ?? "http")://\(head.authority ?? "")\(head.path ?? "/")"
    }
}
